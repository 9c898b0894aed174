"""A lesson folder's own names, qualified by its slug when the catalog takes the lesson in.

A folder writes its questions' ids and its catalog keys without the lesson's name (``bubble``,
``q.bubble.prompt``, ``claims.tests.run``); the catalog puts the slug in (``naive.bubble``,
``q.naive.bubble.prompt``, ``claims.naive.tests.run``). A copy of a folder with only its slug
changed therefore has names of its own and cannot collide with the original's, and the names
the app and the stored answers read stay what they were: slug first, then the folder's own.
"""

from __future__ import annotations

import dataclasses


def own_key(slug: str, key: str) -> str:
    """The catalog key of lesson ``slug``'s ``key``: its family (``q``, ``check``, ``claims``,
    ``lesson``, ...), the slug, then the rest (``q.bubble.prompt`` -> ``q.naive.bubble.prompt``)."""
    family, _, rest = key.partition(".")
    if not rest:
        raise ValueError(f"lesson {slug!r}: key {key!r} needs a family and a name, e.g. 'q.{key}.prompt'")
    return f"{family}.{slug}.{rest}"


def asked_by(question, slug: str):
    """A Prediction or Check as lesson ``slug`` asks it: its id qualified (``bubble`` ->
    ``naive.bubble``) and its lesson set. One already asked by this lesson is kept as it is (the
    catalog rebuilds a lesson with its folder); one asked by another lesson is refused."""
    if question.lesson == slug:
        return question
    if question.lesson:
        raise ValueError(f"lesson {slug}: question {question.id!r} belongs to lesson {question.lesson!r}")
    return dataclasses.replace(question, id=f"{slug}.{question.id}", lesson=slug)


def shown_by(extra, slug: str):
    """An Extra as lesson ``slug`` shows it: its texts' keys qualified (own_key), once."""
    if extra.lesson == slug:
        return extra
    if extra.lesson:
        raise ValueError(f"lesson {slug}: extra {extra.kind!r} belongs to lesson {extra.lesson!r}")
    return dataclasses.replace(extra, texts={role: own_key(slug, key) for role, key in extra.texts.items()},
                               lesson=slug)


__all__ = ["asked_by", "own_key", "shown_by"]
