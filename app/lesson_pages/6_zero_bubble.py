"""Lesson 6: Zero bubble: splitting the backward."""

from pipelab.app.screens.lesson_page import render_lesson

render_lesson("zero-bubble")
