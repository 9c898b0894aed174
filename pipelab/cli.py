"""The ``pipelab`` command: ``serve`` starts the classroom app; ``list``, ``simulate``, ``run``,
``export`` and ``plan`` are the engine's (pipelab.engine.cli.main, ``pipelab run --help``)."""

from __future__ import annotations

import sys

ENGINE_COMMANDS = ("list", "simulate", "run", "export", "plan")

COMMANDS = ("serve", *ENGINE_COMMANDS)
USAGE = """usage: pipelab {serve,list,simulate,run,export,plan} ...

  serve      the classroom app (streamlit flags after it, e.g. --server.port 8501)
  list       the schedules
  simulate   theory: play a schedule on a cost model
  run        run the real multi-process engine and print what was measured
  export     a schedule as a file another runtime reads (torch's CSV)
  plan       PipeDream's planner: which layers on how many replicated workers, profiled here

`pipelab COMMAND --help` for each command's options."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    command = argv[0] if argv else None
    if command not in COMMANDS:  # one line, argparse's words, naming serve too
        choices = ", ".join(repr(name) for name in COMMANDS)
        wrong = "a command is needed" if command is None else f"argument command: invalid choice: {command!r}"
        print(f"pipelab: error: {wrong} (choose from {choices}); `pipelab --help` says what each does",
              file=sys.stderr)
        return 2
    if command == "serve":
        from pipelab.app.serve import main as serve
        return serve(argv[1:]) or 0
    from pipelab.engine.cli.main import main as engine_main
    from pipelab.engine.cli.main import quiet_on_broken_pipe
    return quiet_on_broken_pipe(lambda: engine_main(argv))
