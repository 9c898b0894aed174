"""Lesson 2: GPipe: micro-batches and a flush."""

from pipelab.app.screens.lesson_page import render_lesson

render_lesson("gpipe")
