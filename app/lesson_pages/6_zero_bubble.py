"""Lesson 6: Zero bubble: splitting the backward."""

from app.lesson_page import render_lesson

render_lesson("zero-bubble")
