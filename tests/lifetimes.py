"""Session fixtures that end after the last test that uses them, rather than at the end of the
session: with the tiers in order (tests/conftest.py), the spark tier's Kafka broker and HDFS run,
and its SparkSession's context is active, only while that tier runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

#: Fixture name -> (the last test that uses it, what ends it).
_ENDING: dict[str, tuple[pytest.Item | None, contextlib.ExitStack]] = {}


@contextlib.contextmanager
def until_last_use(request: pytest.FixtureRequest,
                   tier: str | None = None) -> Iterator[contextlib.ExitStack]:
    """For a session fixture: an ExitStack that is closed right after the last test of the
    session that requests the fixture (directly or through other fixtures; with `tier`: the
    last test of that tier, marked so) ran, or else when the session's fixtures end. Tests must
    ask for the fixture by name, not with `request.getfixturevalue`, to be known as its users."""
    name = request.fixturename
    assert name is not None
    users = [item for item in request.session.items
             if name in getattr(item, "fixturenames", ())
             or (tier is not None and item.get_closest_marker(tier))]
    stack = contextlib.ExitStack()
    _ENDING[name] = (users[-1] if users else None, stack)
    try:
        yield stack
    finally:
        _ENDING.pop(name, None)
        stack.close()  # nothing left to do if its last user's teardown closed it


def end_after(item: pytest.Item) -> None:
    """Ends what `item` was the last user of (called once its teardown ran)."""
    for name, (last, stack) in list(_ENDING.items()):
        if last is item:
            del _ENDING[name]
            stack.close()
