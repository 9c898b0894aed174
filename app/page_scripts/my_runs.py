"""My runs: this browser's kept runs; a run's shared link opens here."""

from pipelab.app.screens.my_runs import render

render()
