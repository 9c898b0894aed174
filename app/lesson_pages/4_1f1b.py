"""Lesson 4: 1F1B (PipeDream-Flush): same bubble, less memory."""

from pipelab.app.screens.lesson_page import render_lesson

render_lesson("1f1b")
