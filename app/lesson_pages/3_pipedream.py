"""Lesson 3: PipeDream: asynchronous 1F1B and weight stashing."""

from pipelab.app.screens.lesson_page import render_lesson

render_lesson("pipedream")
