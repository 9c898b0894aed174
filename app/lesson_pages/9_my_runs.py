"""My runs: this browser's kept runs; a run's shared link opens here."""

from app.my_runs import render

render()
