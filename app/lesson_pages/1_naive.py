"""Lesson 1: Naive model parallelism."""

from app.lesson_page import render_lesson

render_lesson("naive")
