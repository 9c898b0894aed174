"""Glossary: the course's terms in English and Chinese."""

from pipelab.app.screens.glossary import render_glossary

render_glossary()
