"""Closed-form predictions, each with the paper it comes from.

p: pipeline devices, m: micro-batches per step, v: model chunks per device, r: rank.
Times are per stage (one device's share of the model) unless said otherwise.

The formulas are plain functions. Which one holds for which schedule is said where the
schedule is registered (its file in engine/schedules/ passes a ``ScheduleTheory``,
engine/theory/schedule_theory.py); the
lookups at the end of this module (``formula_bubble_fraction(name, ...)``, ``peak_inflight``,
...) read it from the registry, so a new schedule brings its own closed forms along.
"""

from __future__ import annotations

from pipelab.engine.theory.schedule_theory import NO_THEORY, BubbleCase, ScheduleTheory

# ---- the closed forms ---------------------------------------------------------------------


def gpipe_bubble_fraction(p: int, m: int) -> float:
    """(p-1)/(m+p-1): the idle share of a GPipe step (arXiv 1811.06965, section 2.2).

    A step lasts (m+p-1) micro-batch slots and each device works in m of them; the same
    holds for 1F1B, which reorders the work but keeps its amount (arXiv 2006.09503, sec. 3).
    """
    return (p - 1) / (m + p - 1)


def one_f_one_b_bubble_fraction(p: int, m: int) -> float:
    """Same as GPipe: 1F1B changes memory, not the bubble (arXiv 2006.09503, section 3.2)."""
    return gpipe_bubble_fraction(p, m)


def naive_bubble_fraction(p: int) -> float:
    """One micro-batch at a time: one device of p works, so utilization is 1/p."""
    return (p - 1) / p


def interleaved_bubble_time(p: int, v: int, t_f: float, t_b: float) -> float:
    """(p-1)/v x (t_f + t_b) per device, t_f and t_b for a whole stage (arXiv 2104.04473,
    section 2.2): each visit of a micro-batch carries 1/v of the work."""
    return (p - 1) / v * (t_f + t_b)


def interleaved_bubble_fraction(p: int, m: int, v: int) -> float:
    """Bubble time over step time, (p-1)/v / (m + (p-1)/v), with uniform stages."""
    bubble = (p - 1) / v
    return bubble / (m + bubble)


def zb_h1_bubble_time(p: int, t_f: float, t_i: float, t_w: float) -> float:
    """(p-1)(T_F + T_B - T_W), the paper's T_B being our input-gradient T_I
    (arXiv 2401.10241, section 2.1): deferred W fill the cool-down; 1/3 of 1F1B's when
    T_F = T_I = T_W. Counted on device 0, from its first to its last action."""
    return max(0.0, (p - 1) * (t_f + t_i - t_w))


def zb_h2_bubble_time(p: int, t_f: float, t_i: float, t_w: float) -> float:
    """(p-1)(T_F + T_B - 2T_W), zero when it fits (arXiv 2401.10241, section 2.2)."""
    return max(0.0, (p - 1) * (t_f + t_i - 2 * t_w))


def synchronous_step_ends(p: int, t_f: float) -> float:
    """(p-1) T_F per device: what a parallelogram-shaped schedule idles in one synchronous step.

    ZB-H2 and ZB-V leave no idle time between a device's first and last action, but device r
    starts r forwards after device 0 and ends about r forwards after it: a parallelogram, not
    a rectangle. The paper's zero bubble lets each device begin the next step as soon as its
    own work is done, which needs the optimizer's synchronization replaced by post-validation
    (arXiv 2401.10241, sections 2.2 and 4). A synchronous step (a flush, then every stage's
    update, as here and in the other schedules) waits for the last device, so each device
    idles (p-1) T_F of the step's window, split between its two ends."""
    return (p - 1) * t_f


def dualpipev_bubble_time(p: int, t_f: float, t_i: float, t_w: float, t_fb: float | None = None) -> float:
    """(PP/2-1)(F&B + B - 3W) per device, the deepseek-ai/DualPipe README's closed form for
    DualPipe (DeepSeek-V3, arXiv 2412.19437, section 3.2.1) and for DualPipeV, DualPipe cut in
    half onto PP/2 devices. PP counts stages, so the V's 2p chunks on p devices give p - 1;
    F, B = I + W and W are one chunk's costs and F&B is a forward and a backward of two
    chunks run as one overlapped pair. This engine has one compute stream per device, so
    the pair runs back to back: t_fb defaults to F + B. With it the form is an upper bound
    here: on unit costs the simulator idles (p-1) T_F per device, half of it."""
    t_b = t_i + t_w
    if t_fb is None:
        t_fb = t_f + t_b
    return max(0.0, (p - 1) * (t_fb + t_b - 3 * t_w))


def v_min_peak_activations(p: int, m: int) -> float:
    """(p+4)//3 stages' worth on the worst device, at most m: V-Min's memory, about a third of
    1F1B's p (arXiv 2405.15362, section 3; the authors' summary table at T_F = T_B = T_W)."""
    return float(min((p + 4) // 3, m))


def v_half_peak_activations(p: int, m: int) -> float:
    """(p+2)//2 stages' worth on the worst device, at most m: V-Half's memory, about half of
    1F1B's p (arXiv 2405.15362, section 3)."""
    return float(min((p + 2) // 2, m))


def one_f_one_b_bubble_time(p: int, t_f: float, t_i: float, t_w: float) -> float:
    """(p-1)(T_F + T_B + T_W) with the backward split into I and W (arXiv 2401.10241, eq. 1)."""
    return (p - 1) * (t_f + t_i + t_w)


def bubble_fraction_from_time(bubble_time: float, m: int, work_per_microbatch: float) -> float:
    """Turn a bubble time into a fraction of the step: bubble / (m x work + bubble)."""
    total = m * work_per_microbatch + bubble_time
    return bubble_time / total if total > 0 else 0.0


# ---- lookups by registered name (callers: the app, lessons, bench, pipelab.engine.results.result) ---------


def schedule_theory(schedule: str) -> ScheduleTheory:
    """The closed forms registered with ``schedule``; none for CUSTOM (a hand-written schedule) or an unknown name."""
    # Not at module level: importing the registry imports every schedule module
    # (engine/schedules/__init__.py), and they read their closed forms from this one.
    from pipelab.engine.schedules.registry import REGISTRY
    info = REGISTRY.get(schedule)
    return info.theory if info is not None else NO_THEORY


# "No closed form" is an answer, None, not an error: a schedule (or CUSTOM) that registered
# none gets None, and an exception raised inside a formula is a bug and travels up unchanged.

def formula_bubble_fraction(schedule: str, p: int, m: int, v: int = 1, t_f: float = 1.0, t_i: float = 1.0,
                            t_w: float = 1.0, overlapped: bool = False) -> float | None:
    """The closed-form bubble fraction of device 0 for a registered schedule, uniform stages;
    t_f, t_i, t_w are one stage's costs. The window is one synchronous step, the one the engine
    measures, or with ``overlapped`` one steady step of a run whose steps overlap
    (engine/schedules/stream.py). None if the schedule registered no formula."""
    form = schedule_theory(schedule).bubble_fraction
    return None if form is None else form(BubbleCase(p=p, m=m, v=v, t_f=t_f, t_i=t_i, t_w=t_w, overlapped=overlapped))


def formula_bubble_time(schedule: str, p: int, t_f: float = 1.0, t_i: float = 1.0,
                        t_w: float = 1.0) -> float | None:
    """Idle time per device in one synchronous step, from the schedule's closed form; None without one."""
    form = schedule_theory(schedule).bubble_time
    return None if form is None else form(p, t_f, t_i, t_w)


def peak_inflight(schedule: str, p: int, m: int, r: int, v: int = 1) -> int | None:
    """Most micro-batches (per stage chunk) whose activations rank r holds at once (until I or B);
    None without a closed form."""
    form = schedule_theory(schedule).peak_inflight
    return None if form is None else form(p, m, r, v)


def peak_activations(schedule: str, p: int, m: int) -> float | None:
    """Most activations the worst device holds, from F until its backward is complete (B, or
    W after a split one), in full stages x micro-batches (a chunk of v counts 1/v), m >= p;
    what Timeline.peak_activations measures. None without a closed form."""
    form = schedule_theory(schedule).peak_activations
    return None if form is None else form(p, m)


def weight_versions(schedule: str, p: int, r: int) -> int:
    """Weight versions stage r must keep (one for a synchronous or unknown schedule)."""
    return schedule_theory(schedule).weight_versions(p, r)


# ---- data parallelism around the pipeline (PP x DP) ------------------------------------------
def fixed_global_batch_bubble_fraction(p: int, global_microbatches: int, d: int) -> float:
    """GPipe's and 1F1B's (p-1)/(m+p-1) with the global batch fixed at B = b x m x d rows:
    each of d replicas gets m = global / d micro-batches. At a fixed global batch more
    replicas leave each pipeline fewer micro-batches, but on a fixed number of workers
    n = p x d they also shorten it: Megatron-LM's section 3.3 (arXiv 2104.04473) writes the
    bubble's ratio (p-1)/m as (n-d)/b' with b' = B/b micro-batches in all, falling as d grows."""
    return gpipe_bubble_fraction(p, global_microbatches // d)


def ring_all_reduce_seconds(nbytes: float, d: int, bandwidth_bytes_per_s: float, hop_latency_s: float = 0.0) -> float:
    """A ring all-reduce of ``nbytes`` over d processes: each sends and receives 2(d-1)/d of the
    bytes (a reduce-scatter, then an all-gather) in 2(d-1) hops (Patarasuk and Yuan, 2009; what
    NCCL and gloo's ring algorithms do). 0 for d = 1."""
    if d <= 1:
        return 0.0
    return 2 * (d - 1) / d * nbytes / bandwidth_bytes_per_s + 2 * (d - 1) * hop_latency_s


def exposed_reduce_s(stage: int, t_b: float, t_r: float, at_flush: bool = False) -> float:
    """The part of stage ``stage``'s all-reduce (t_r) that outlasts a 1F1B or GPipe step, with
    uniform stages of backward t_b: placed right after its own last backward, stage s has
    about s x t_b of idle time before the step's last backward (stage 0's) ends, so
    max(0, t_r - s x t_b) shows (Megatron-LM overlaps it so, arXiv 2104.04473, section 4.2);
    at the flush nothing hides and all of t_r shows."""
    return t_r if at_flush else max(0.0, t_r - stage * t_b)
