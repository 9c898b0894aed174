"""The instructor's view of the class's runs (needs PIPELAB_INSTRUCTOR_TOKEN)."""

from app.instructor import render

render()
