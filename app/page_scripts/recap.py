"""Recap: every schedule side by side, and which one to choose for a memory budget."""

from pipelab.app.screens.recap import render_recap

render_recap()
