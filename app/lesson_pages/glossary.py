"""Glossary: the course's terms in English and Chinese."""

from app.glossary import render_glossary

render_glossary()
