"""``pipelab run``: run the real engine and print what was measured."""

from __future__ import annotations

import os
import signal
import sys
import threading

from pipelab.engine.config import COMMAND_LINE_DEFAULTS, config_from_args, default_layers
from pipelab.engine.results.metrics import RunMetrics
from pipelab.engine.results.records import Placement
from pipelab.engine.runtime.placement import cpu_list_text
from pipelab.engine.runtime.profile_costs import PROFILE_SCHEDULE, needs_costs, with_profiled_costs
from pipelab.engine.schedules.replication import replicas_text
from pipelab.engine.theory.breakdown import breakdown_table


class Terminated(BaseException):
    """SIGTERM (kill, docker stop) as an exception, so the launcher's cleanup runs."""


def _raise_terminated(signum, frame):
    raise Terminated()


def under_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ or ("RANK" in os.environ and "WORLD_SIZE" in os.environ)


def cmd_run(args) -> int:
    if not under_torchrun():
        return _run(args)
    # A torchrun rank is a plain Python process. At its interpreter's finalization, after a
    # finished run and destroy_process_group, torch's gloo threads now and then abort it
    # ("terminate called without an active exception", SIGABRT, with no Python frame left):
    # 3 of 82 runs of tests/test_engine_run.py's torchrun command here (0 of 140 since this
    # change), and torchrun then reports the whole run failed. Gloo threads outliving
    # finalization is a known torch problem (pytorch/pytorch#190489, #179291). The engine's
    # own ranks never hit it: multiprocessing ends its children with os._exit, past
    # finalization. A torchrun rank now ends the same way, once its output is written.
    code = _run(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _run(args) -> int:
    from pipelab.engine.runtime.launch import run
    from pipelab.engine.runtime.rank_entry import run_under_torchrun
    from pipelab.engine.runtime.rank_processes import RunFailed
    config = config_from_args(args)
    on_torch = getattr(args, "runtime", "engine") == "torch"
    if on_torch:
        from pipelab.engine.torch_bridge.launch import check_torch_config
        check_torch_config(config)  # one line and exit 2 before any process starts
        if under_torchrun():
            raise ValueError("--runtime torch starts its own ranks; run it without torchrun")
    try:
        if under_torchrun():
            result = run_under_torchrun(config)  # torchrun's agent stops its own workers
            if result is None:
                return 0
        else:
            # By default SIGTERM ends the process on the spot, leaving the run's temp folder
            # behind; as an exception it unwinds through launch.run's cleanup instead. (Only
            # the main thread may set a handler; the ranks clean up after a vanished launcher.)
            main_thread = threading.current_thread() is threading.main_thread()
            previous = signal.signal(signal.SIGTERM, _raise_terminated) if main_thread else None
            try:
                if not getattr(args, "unit_costs", False) and needs_costs(config):
                    config = with_profiled_costs(config, run)
                    print(costs_note(config))
                result = run(config, on_progress=None)  # config.runtime says which runtime runs it
            finally:
                if main_thread:
                    signal.signal(signal.SIGTERM, previous)
    except RunFailed as err:
        print(f"pipelab: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # the host refused what a run needs (processes, semaphores, files): one line, as above
        if isinstance(err, BrokenPipeError):
            raise
        print(f"pipelab: error: this host could not run it: {err}", file=sys.stderr)
        return 1
    except (Terminated, KeyboardInterrupt) as err:
        how = "terminated" if isinstance(err, Terminated) else "interrupted"
        print(f"engine: {how}; the ranks were stopped and the run's temp files removed", file=sys.stderr)
        return 128 + (signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT)
    if getattr(args, "layers", 0) is None:  # the user left the depth to us: say what was picked
        note = default_layers(config.with_(layers=COMMAND_LINE_DEFAULTS["layers"]))[1]
        if note:
            print(note)
    print(summary(result))
    if args.out:
        result.write_json(args.out)
    if args.trace:
        result.all_processes_timeline().write_chrome_trace(args.trace)
    return 0


def costs_note(config) -> str:
    """The line saying what a cost-aware schedule was built for (engine/runtime/profile_costs.py)."""
    t_f, t_i, t_w, link = config.schedule_costs
    return (f"{config.schedule} built for the costs one profiled step of {PROFILE_SCHEDULE} measured: "
            f"T_F {t_f * 1e3:.3f} ms, T_I {t_i * 1e3:.3f} ms, T_W {t_w * 1e3:.3f} ms, link {link * 1e3:.3f} ms")


def summary(result) -> str:
    from pipelab.engine.results.windows import WARM_UP_STEPS
    m, c = result.metrics, result.config
    s = result.schedule
    placement = (f"{s.num_stages} stages on {s.num_ranks} workers ({replicas_text(s.stage_replicas)})"
                 if s.is_replicated else f"p={s.num_ranks}")
    lines = [f"{s.name}: {placement} m={s.num_microbatches} v={s.chunks}, model {c.model} "
             f"({c.layers} layers, hidden {c.hidden}), {c.steps} step{'' if c.steps == 1 else 's'} on {result.device}"
             f" (messages: {result.transport})" + (", steps overlapping" if m.overlapped_steps else ""),
             f"step time (wall, median)   {m.wall_step_time_s * 1e3:8.1f} ms"
             f"   device clock {m.device_step_time_s * 1e3:.1f} ms"
             f"   host CPU, all ranks {m.cpu_per_step_s * 1e3:.1f} ms",
             "bubble fraction            device clock {:.3f} | wall clock {:.3f} | simulated {:.3f} "
             "(each action's mean cost {:.3f}) | formula {}".format(
                 m.device_bubble_fraction, m.wall_bubble_fraction, m.simulated_bubble_fraction,
                 m.simulated_bubble_fraction_per_action_costs,
                 "n/a" if m.formula_bubble_fraction is None else f"{m.formula_bubble_fraction:.3f}"),
             "per device (device clock)  " + " ".join(f"{b:.3f}" for b in m.device_bubble_fraction_per_device),
             "peak activation MiB/device " + " ".join(f"{result.memory[r].peak_activation_bytes / 2**20:.2f}MiB"
                                                     for r in sorted(result.memory))
             + " | simulated "
             + " ".join(f"{b / 2**20:.2f}MiB" for b in m.simulated_peak_activation_bytes_per_device),
             # A count, not bytes: RunMetrics.peak_held_microbatches_per_device (docs/results.md).
             "held micro-batches/device  " + " ".join(f"{a:g}" for a in m.peak_held_microbatches_per_device)
             + " (most a device holds at once, from F until B or W; a chunk counts 1/v)",
             "weight versions per device "
             + " ".join(str(result.memory[r].weight_versions) for r in sorted(result.memory)),
             "message slots per device   " + " ".join("—" if result.memory[r].message_buffer_bytes is None
                                                     else f"{result.memory[r].message_buffer_bytes / 2**20:.2f}MiB"
                                                     for r in sorted(result.memory)),
             "loss per step              " + " ".join(f"{x:.4f}" for x in result.losses)]
    if not m.overlapped_steps and result.measured_steps()[0] < WARM_UP_STEPS:  # too short to leave them out
        lines.insert(2, f"  (the figures include warm-up steps, which pay one-off costs: --steps {WARM_UP_STEPS + 1} "
                        f"or more measures the steps after the first {WARM_UP_STEPS})")
    if m.placement is not None:  # under the first line: where its processes ran
        lines.insert(1, placement_line(m.placement, "rank" if result.data_parallel is None else "process",
                                       checked=result.check is not None))
    lines += data_parallel_lines(result)
    lines += breakdown_lines(m)
    if m.step_check is not None:
        verdicts = m.step_check
        lines.append(f"step check (clip {c.clip_grad_norm:g})    clipped steps {_steps(verdicts.clipped)}, "
                     f"skipped {_steps(verdicts.skipped)}"
                     + (f", replayed after a rollback {_steps(verdicts.replayed)}"
                        if m.overlapped_steps else ""))
    if result.check is not None:
        lines.append(f"gradient check             max relative difference {result.check.grad_max_rel_diff:.2e}"
                     + (f", loss {result.check.loss:.6f} vs one process {result.check.reference_loss:.6f}"
                        if result.check.loss is not None else ""))
        lines.append(f"after {c.steps} step{'' if c.steps == 1 else 's'}              weights max relative difference "
                     f"{result.check.weight_max_rel_diff:.2e}"
                     + ("" if result.check.losses_max_rel_diff is None
                        else f", losses {result.check.losses_max_rel_diff:.2e}")
                     + ("" if result.check.replica_weight_max_diff is None
                        else f"; replicas differ by {result.check.replica_weight_max_diff:.1e}"))
    return "\n".join(lines)


def placement_line(placement: Placement, each: str = "rank", checked: bool = True) -> str:
    """Where the ranks ran (engine/runtime/placement.py): pinned or not and why, and each process's
    CPUs as the rank read its own affinity (Placement.ran_on: what the OS held it to). ``each``:
    what a process is called, "process" where there are several pipelines or replicated stages;
    ``checked``: the run had a gradient check (a launch keeps a core for one either way)."""
    if placement.pinned:
        reference = cpu_list_text(placement.reference_cpus)
        if placement.reason == Placement.SHARED_REFERENCE:
            check = ", the gradient check on their cores after the steps" if checked else ""
        else:
            check = f", the gradient check on CPUs {reference}" if checked else f", CPUs {reference} kept free"
        how = f"pinned, a physical core each{check}" + (", polling for messages" if placement.polls else "")
    else:
        many = "ranks" if each == "rank" else "processes"
        one_more = "the gradient check's one process" if checked else "one kept for a gradient check though none ran"
        few = f"{placement.cores} free physical cores for {placement.ranks} {many} and {one_more}"
        why = {Placement.OFF: "PIPELAB_PIN=0", Placement.UNSUPPORTED: "no CPU affinity on this OS",
               Placement.GPU: "a GPU run: its clock is CUDA events"}.get(placement.reason, few)
        how = f"not pinned ({why})"
    ran_on = placement.ran_on
    if not ran_on:  # a result saved before runs recorded it
        where = ""
    elif len(set(ran_on)) == 1 and len(ran_on) > 1:
        where = f": each {each} free to run on CPUs {cpu_list_text(ran_on[0])}"
    else:
        where = ": " + ", ".join(f"{each} {r} on CPUs {cpu_list_text(cpus)}" for r, cpus in enumerate(ran_on))
    per_host = " (under torchrun each host pins its own)" if placement.scope == Placement.PER_HOST else ""
    return f"ranks                      {how}{where}{per_host}"


def data_parallel_lines(result) -> list[str]:
    """With data parallelism: where the processes sit, and each stage's all-reduce."""
    dp = result.data_parallel
    if dp is None:
        return []
    c, s = result.config, result.schedule
    world = dp.replicas * c.stages
    if s.is_replicated:
        when = ("averaged before each update, one micro-batch from each replica" if s.is_async
                else "summed after its worker's own last backward")
        lines = [f"replicated stages          {replicas_text(s.stage_replicas)}: {s.num_ranks} processes, "
                 f"{s.num_microbatches} micro-batches of {c.microbatch_size} rows a step, each replicated "
                 f"stage's gradients {when}"]
    else:
        lines = [f"data parallel              d={dp.replicas} pipelines x p={c.stages} = {world} processes, "
                 f"global batch {c.global_microbatches} micro-batches of {c.microbatch_size} rows, each stage's "
                 f"all-reduce after {'its own last backward' if dp.reduce_at == 'backward' else 'the flush'}"]
    lines += [f"  {line}" for line in dp.layout]
    lines.append("all-reduce per stage       cost " + " ".join(f"{t * 1e3:.2f}ms" for t in dp.reduce_cost_s)
                 + " | exposed, device clock " + " ".join(f"{t * 1e3:.2f}ms" for t in dp.exposed_reduce_s)
                 + " | wall clock " + " ".join(f"{t * 1e3:.2f}ms" for t in dp.exposed_reduce_wall_s)
                 + " | simulated " + " ".join(f"{t * 1e3:.2f}ms" for t in dp.simulated_exposed_reduce_s))
    return lines


def _steps(steps: tuple[int, ...]) -> str:
    """Step numbers as a list, or "none"."""
    return str(list(steps)) if steps else "none"


def breakdown_lines(metrics: RunMetrics) -> list[str]:
    """The bubble breakdown (engine/theory/breakdown.py) as aligned lines, each with its change."""
    return (["bubble breakdown           from the formula to this run, one measured effect at a time:"]
            + [f"  {row.label:<50} {row.value:.3f}" + ("" if row.change is None else f"  {row.change:+.3f}")
               for row in breakdown_table(metrics)])
