"""Closed-form predictions, each with the paper it comes from.

p: pipeline devices, m: micro-batches per step, v: model chunks per device, r: rank.
Times are per stage (one device's share of the model) unless said otherwise.
"""

from __future__ import annotations


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


def one_f_one_b_bubble_time(p: int, t_f: float, t_i: float, t_w: float) -> float:
    """(p-1)(T_F + T_B + T_W) with the backward split into I and W (arXiv 2401.10241, eq. 1)."""
    return (p - 1) * (t_f + t_i + t_w)


def bubble_fraction_from_time(bubble_time: float, m: int, work_per_microbatch: float) -> float:
    """Turn a bubble time into a fraction of the step: bubble / (m x work + bubble)."""
    total = m * work_per_microbatch + bubble_time
    return bubble_time / total if total > 0 else 0.0


def peak_inflight(schedule: str, p: int, m: int, r: int, v: int = 1) -> int:
    """Most micro-batches (per stage chunk) whose activations rank r holds at once.

    gpipe: m (all forwards before any backward, arXiv 1811.06965);
    1f1b, pipedream, 2bw: p - r (warm-up depth + 1, arXiv 2006.09503);
    zb-h1: p - r, counted until I, like 1F1B (arXiv 2401.10241, sec. 2.1);
    zb-h2: 2(p - r) - 1, so 2p - 1 on rank 0 (sec. 2.2);
    interleaved: Megatron's warm-up (p - r - 1) x 2 + (v - 1) x p forwards plus one, in chunks;
    zb-v: at most 2p chunks (p stages' worth, 1F1B's peak) on any rank (sec. 6), an upper bound;
    dualpipev: 2p + 1 chunks on every rank, the DualPipe README's PP + 1 (PP = 2p stages);
    naive: 1.
    """
    if schedule == "naive":
        return 1
    if schedule == "gpipe":
        return m
    if schedule in ("1f1b", "pipedream", "pipedream-2bw", "zb-h1"):
        return min(p - r, m)
    if schedule == "zb-h2":
        return min(2 * (p - r) - 1, m)
    if schedule == "interleaved":
        if v == 1:
            return min(p - r, m)
        if m == p:
            return m * v
        return min((p - r - 1) * 2 + (v - 1) * p + 1, m * v)
    if schedule == "zb-v":
        return min(2 * p, 2 * m)
    if schedule == "dualpipev":
        return min(2 * p + 1, 2 * m)
    raise ValueError(f"no formula for schedule {schedule!r}")


def peak_activations(schedule: str, p: int, m: int) -> float:
    """Most activations the worst device holds, from F until its backward is complete (B, or
    W after a split one), in full stages x micro-batches (a chunk of v counts 1/v), m >= p;
    what Timeline.peak_activations measures.

    gpipe: m; 1f1b: p on rank 0 (p - r on rank r, arXiv 2006.09503); zb-h1: p on every rank,
    W runs r micro-batches late on rank r (arXiv 2401.10241, section 2.1); zb-h2: 2p - 1
    (section 2.2); zb-v: p, 1F1B's peak (section 6); dualpipev: p + 1/2, the DualPipe README's
    PP + 1 with PP = 2p chunks of half a stage (arXiv 2412.19437).
    """
    if schedule == "gpipe":
        return float(m)
    if schedule in ("1f1b", "zb-h1", "zb-v"):
        return float(min(p, m))
    if schedule == "zb-h2":
        return float(min(2 * p - 1, m))
    if schedule == "dualpipev":
        return p + 0.5
    raise ValueError(f"no activation formula for schedule {schedule!r}")


def weight_versions(schedule: str, p: int, r: int) -> int:
    """Weight versions stage r must keep: PipeDream p - r (weight stashing, arXiv 1806.03377,
    section 3.3), 2BW two (double buffering, arXiv 2006.09503, section 3.1), else one."""
    if schedule == "pipedream":
        return p - r
    if schedule == "pipedream-2bw":
        return 2 if r < p - 1 else 1
    return 1


def formula_bubble_fraction(schedule: str, p: int, m: int, v: int = 1,
                            t_f: float = 1.0, t_i: float = 1.0, t_w: float = 1.0, overlapped: bool = False) -> float:
    """The closed-form bubble fraction of device 0 for a registered schedule.

    Uniform stages are assumed; t_f, t_i, t_w are one stage's costs (t_b = t_i + t_w). The
    window is one synchronous step, the one the engine measures. So zb-h2 and zb-v, whose
    bubble within each device's own span is the paper's (p-1)(T_F + T_B - 2T_W), zero when
    that is negative, add the (p-1) T_F of the step's two ends (synchronous_step_ends); the
    paper's zero holds only where steps overlap. zb-v has no closed form of its own in the
    paper; with T_F = T_I = T_W it matches the simulator once m >= 2p. dualpipev takes the
    DualPipe README's form with its F&B pair run back to back (dualpipev_bubble_time), an
    upper bound on this engine.

    ``overlapped``: the window is one steady step of a run whose steps overlap
    (engine/stream.py). Then zb-h2 and zb-v keep only their own-span bubble, as the paper
    counts it (arXiv 2401.10241, section 4; from m >= 2p-1, which their extra warm-up
    forwards need, and for zb-v m >= 2p, where its order holds 1F1B's memory, to m = p where the shape is 1F1B's), and PipeDream and 2BW, 1F1B without a flush,
    keep every stage busy (arXiv 1806.03377, section 3). The others are unchanged: a
    synchronous step still waits for its last backward before its next forward.
    """
    work = t_f + t_i + t_w
    if overlapped and schedule in ("pipedream", "pipedream-2bw"):
        return 0.0
    if overlapped and schedule in ("zb-h2", "zb-v"):
        return bubble_fraction_from_time(zb_h2_bubble_time(p, t_f, t_i, t_w), m, v * work)
    if schedule == "naive":
        return naive_bubble_fraction(p)
    if schedule in ("gpipe", "1f1b", "pipedream", "pipedream-2bw"):
        return gpipe_bubble_fraction(p, m)
    if schedule == "interleaved":
        return bubble_fraction_from_time(interleaved_bubble_time(p, v, t_f, t_i + t_w), m, work)
    if schedule == "zb-h1":
        return bubble_fraction_from_time(zb_h1_bubble_time(p, t_f, t_i, t_w), m, work)
    if schedule in ("zb-h2", "zb-v"):
        bubble = zb_h2_bubble_time(p, t_f, t_i, t_w) + synchronous_step_ends(p, t_f)
        return bubble_fraction_from_time(bubble, m, v * work)  # zb-v: two chunks per device
    if schedule == "dualpipev":
        return bubble_fraction_from_time(dualpipev_bubble_time(p, t_f, t_i, t_w), m, 2 * work)
    raise ValueError(f"no formula for schedule {schedule!r}")
