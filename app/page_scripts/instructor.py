"""The instructor's view of the class's runs (needs PIPELAB_INSTRUCTOR_TOKEN)."""

from pipelab.app.screens.instructor import render

render()
