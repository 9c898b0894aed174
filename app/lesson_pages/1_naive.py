"""Lesson 1: Naive model parallelism."""

from pipelab.app.screens.lesson_page import render_lesson

render_lesson("naive")
