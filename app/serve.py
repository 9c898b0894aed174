"""Serve the classroom app: ``python -m pipelab.app.serve [streamlit flags]`` (bin/serve, the Docker image).

Streamlit imports a page's modules when a session first runs it, so on a fresh server the
first student waited for pandas, plotly and the app's own modules before Run appeared.
Here they are imported first, and then ``streamlit run app/main.py`` starts in this same
process with every flag given (``--server.port``, ``--server.address``, ...): the first session
finds them in ``sys.modules``. The server's settings (app/streamlit_config.toml) go first, as
flags: streamlit reads ``.streamlit/config.toml`` (a link to that file in the checkout) only
from the folder it starts in, and an installed ``pipelab serve`` starts from any folder.

This module imports nothing heavy itself: multiprocessing's forkserver imports the server's
main module (this one, as ``__mp_main__``) in each process it starts.
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
import signal
import sys
import threading
import time
from pathlib import Path

MAIN = Path(__file__).resolve().parent / "main.py"
SETTINGS = MAIN.parent / "streamlit_config.toml"
"""The classroom server's streamlit settings; a flag given to serve overrides one (the last wins)."""
LIBRARIES = ("numpy", "pandas", "pyarrow", "pyarrow.pandas_compat", "plotly.graph_objects", "plotly.io",
             "pipelab.engine.runtime.launch", "pipelab.engine.results.result")
"""What the pages draw with: charts (plotly), tables (pandas, sent as Arrow); and the engine
modules the runner starts runs with (the ranks import torch, in processes of their own)."""
EXIT_WITH_ENV = "PIPELAB_EXIT_WITH_PID"
"""Set to a process's pid (bench.app_latency.streamlit_server sets its own): the server stops
itself once that process is gone. A test run killed outright (a timeout's SIGTERM, SIGKILL)
never reaches the code that would stop the server it started in a session of its own."""
NOT_PRELOADED = ("pipelab.app.main", "pipelab.app.serve")
"""app/main.py is the script streamlit runs (importing it would run the app); this is the launcher."""


def app_modules() -> tuple[str, ...]:
    """Every module of the app package, which the pages import as their sessions run them."""
    from pipelab import app
    names = (info.name for info in pkgutil.walk_packages(app.__path__, "pipelab.app.") if not info.ispkg)
    return tuple(sorted(name for name in names if name not in NOT_PRELOADED))


def preload() -> tuple[str, ...]:
    """Import the libraries and the app's modules; returns their names."""
    # Outside a running server, st.cache_data's decorator logs "No runtime found" at import;
    # its cache binds to the server's runtime when first called, so the line is only noise.
    importlib.import_module("streamlit.runtime.caching.cache_data_api")  # its logger, set up by streamlit
    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = cache_log.level
    cache_log.setLevel(logging.ERROR)
    try:
        names = (*LIBRARIES, *app_modules())
        for name in names:
            importlib.import_module(name)
    finally:
        cache_log.setLevel(level)
    return names


def exit_with(pid: int, every_s: float = 1.0) -> threading.Thread:
    """Send this process SIGTERM (streamlit's own clean stop) once ``pid`` no longer exists."""
    from pipelab.engine.runtime.rank_processes import process_alive

    def watch() -> None:
        while process_alive(pid):
            time.sleep(every_s)
        os.kill(os.getpid(), signal.SIGTERM)
    watcher = threading.Thread(target=watch, name="pipelab-exit-with", daemon=True)
    watcher.start()
    return watcher


def settings_flags(path: Path = SETTINGS) -> list[str]:
    """``[server] port = 8501`` -> ``--server.port=8501``, for every setting in the file."""
    import tomllib
    flags = []
    for section, values in tomllib.loads(path.read_text()).items():
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{section}.{key}={text}")
    return flags


def main(argv: list[str] | None = None) -> None:
    flags = sys.argv[1:] if argv is None else argv
    if os.environ.get(EXIT_WITH_ENV, "").isdigit():
        exit_with(int(os.environ[EXIT_WITH_ENV]))
    preload()
    from pipelab.app.runner import cluster
    cluster.shared()  # PIPELAB_RAY_ADDRESS: connect now, and say in the log where runs go (or why they cannot)
    from streamlit.web import cli
    cli.main(["run", str(MAIN), *settings_flags(), *flags], prog_name="streamlit")


if __name__ == "__main__":
    main()
