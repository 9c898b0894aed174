"""Lesson 5: Interleaved 1F1B (Megatron-LM)."""

from pipelab.app.screens.lesson_page import render_lesson

render_lesson("interleaved")
