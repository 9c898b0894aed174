"""At the papers' scale: Zero Bubble's Table 5 columns from the student's p, m and costs."""

from pipelab.app.screens.papers_page import render_papers

render_papers()
