"""Lesson 5: Interleaved 1F1B (Megatron-LM)."""

from app.lesson_page import render_lesson

render_lesson("interleaved")
