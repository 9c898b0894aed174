"""Recap: every schedule side by side, and which one to choose for a memory budget."""

from app.recap import render_recap

render_recap()
