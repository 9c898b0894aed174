"""Lesson 3: PipeDream: asynchronous 1F1B and weight stashing."""

from app.lesson_page import render_lesson

render_lesson("pipedream")
