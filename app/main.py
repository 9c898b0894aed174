"""PipeLab classroom app: ``bin/serve`` (app/serve.py, which preloads the heavy modules and
then runs this script), or ``streamlit run app/main.py`` from the repository root."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if (ROOT / "pipelab" / "__init__.py").is_file() and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # a checkout: so `pipelab` imports however streamlit is started

# Streamlit installs this script as sys.modules["__main__"], and multiprocessing re-runs
# the parent's __main__ in every child it starts, as "__mp_main__". Without this guard each
# rank of a run imported streamlit, plotly and pandas and started a runner of its own,
# whose warm-up then failed in every rank (tests/test_app.py replays this).
if __name__ != "__mp_main__":
    from pipelab.app.navigation import main

    main()
