"""Lesson 7: Playground: write your own schedule."""

from app.playground import render

render()
