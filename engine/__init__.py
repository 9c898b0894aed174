"""The engine: schedules, the simulator and the multi-process runtime (``pipelab run``).

``from pipelab.engine import run_pipeline`` runs your own nn.Sequential (engine/user_run.py).
It is imported on first use: importing ``pipelab.engine.config`` and the other light modules
must not import torch (the app's pages and the forkserver's parent stay light).
"""


def __getattr__(name: str):
    if name == "run_pipeline":
        from pipelab.engine.user_run import run_pipeline
        return run_pipeline
    raise AttributeError(f"module 'pipelab.engine' has no attribute {name!r}")
