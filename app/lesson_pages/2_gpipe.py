"""Lesson 2: GPipe: micro-batches and a flush."""

from app.lesson_page import render_lesson

render_lesson("gpipe")
