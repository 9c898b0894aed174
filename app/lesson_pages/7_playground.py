"""Lesson 7: Playground: write your own schedule."""

from pipelab.app.screens.playground import render

render()
