"""``pipelab export``: a schedule as a file another runtime reads (torch's CSV)."""

from __future__ import annotations

import argparse
import sys

from pipelab.engine.actions import ScheduleError
from pipelab.engine.torch_bridge.csv_format import FORMAT, export_csv

FORMATS = (FORMAT,)


def add_export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schedule", help="schedule name (see `pipelab list`), or custom with --custom")
    p.add_argument("--stages", type=int, help="pipeline devices p (read from the file with --custom)")
    p.add_argument("--microbatches", type=int, help="micro-batches m per step (read from the file with --custom)")
    p.add_argument("--chunks", type=int, default=None, help="model chunks per device v")
    p.add_argument("--custom", help="a hand-written schedule: one line of actions per rank, or a torch CSV")
    p.add_argument("--format", default=FORMAT, choices=FORMATS,
                   help="torch-csv: torch.distributed.pipelining's compute-only CSV (_load_csv, torchtitan's "
                        "--parallelism.pipeline_parallel_schedule_csv)")
    p.add_argument("--reduce-grad", action="store_true",
                   help="data parallelism: each stage's REDUCE_GRAD right after its last backward, as torch places it")
    p.add_argument("--out", help="write here (default: standard output)")


def cmd_export(args) -> int:
    schedule = _schedule(args)
    text = export_csv(schedule)
    if not args.out:
        sys.stdout.write(text)
        return 0
    try:
        with open(args.out, "w", newline="") as f:
            f.write(text)
    except OSError as err:
        raise ScheduleError(f"cannot write --out {args.out}: {err.strerror}") from None
    p, m, v = schedule.num_ranks, schedule.num_microbatches, schedule.chunks
    print(f"{schedule.name}: p={p} m={m} v={v} -> {args.out} ({args.format}, one row per rank)", file=sys.stderr)
    return 0


def _schedule(args):
    from pipelab.engine.schedules import CUSTOM, build_schedule
    from pipelab.engine.theory.validate import parse_schedule, validate
    if args.custom is not None or args.schedule == CUSTOM:
        if args.custom is None:
            raise ScheduleError.of("custom_needs_file")
        try:
            with open(args.custom) as f:
                text = f.read()
        except OSError as err:
            raise ScheduleError(f"cannot read --custom {args.custom}: {err.strerror}") from None
        if args.custom.endswith(".csv"):  # torch's own CSV: its OVERLAP_F_B cells too
            from pipelab.engine.torch_bridge.csv_format import import_csv
            schedule = import_csv(text, num_microbatches=args.microbatches)
            if args.stages is not None and schedule.num_ranks != args.stages:
                raise ScheduleError.of("line_count", expected=args.stages, got=schedule.num_ranks)
        else:
            schedule = parse_schedule(text, num_ranks=args.stages, num_microbatches=args.microbatches)
    else:
        if args.schedule is None:
            raise ScheduleError("export needs --schedule NAME (or --custom FILE)")
        for flag, value in (("--stages", args.stages), ("--microbatches", args.microbatches)):
            if value is None:
                raise ScheduleError(f"export --schedule {args.schedule} needs {flag}")
        schedule = build_schedule(args.schedule, args.stages, args.microbatches, args.chunks)
    if getattr(args, "reduce_grad", False) and not schedule.reduces_gradients:
        from pipelab.engine.schedules.data_parallel import with_gradient_reduce
        schedule = with_gradient_reduce(schedule)
    validate(schedule)
    return schedule
