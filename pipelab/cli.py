"""The ``pipelab`` command: ``serve`` starts the classroom app; ``list``, ``simulate``, ``run`` and
``export`` are the engine's (pipelab.engine.cli.main, ``pipelab run --help``)."""

from __future__ import annotations

import sys

ENGINE_COMMANDS = ("list", "simulate", "run", "export")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        from pipelab.app.serve import main as serve
        return serve(argv[1:]) or 0
    if argv[:1] in ([], ["-h"], ["--help"]):
        print("usage: pipelab {serve,list,simulate,run,export} ...\n\n"
              "  serve      the classroom app (streamlit flags after it, e.g. --server.port 8501)\n"
              "  list       the schedules\n"
              "  simulate   theory: play a schedule on a cost model\n"
              "  run        run the real multi-process engine and print what was measured\n"
              "  export     a schedule as a file another runtime reads (torch's CSV)\n\n"
              "`pipelab COMMAND --help` for each command's options.")
        return 0 if argv else 2
    from pipelab.engine.cli.main import main as engine_main
    from pipelab.engine.cli.main import quiet_on_broken_pipe
    return quiet_on_broken_pipe(lambda: engine_main(argv))
