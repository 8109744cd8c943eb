"""The streamed JSON writer: what json.dumps writes, with lazy arrays written as they come."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from dataflow_engine.render.json_stream import write_json

pytestmark = pytest.mark.unit

PLAIN: dict[str, Any] = {
    "name": "a \"quoted\"\nname", "empty": {}, "none": [], "n": 1.5, "flag": True,
    "nested": {"list": [1, [2, {"x": None}]], "deeper": {"k": "v"}}, "ünïcode": "✓",
}


def _written(value: Any) -> str:
    out = io.StringIO()
    write_json(value, out)
    return out.getvalue()


def test_without_iterators_it_writes_what_json_dumps_writes() -> None:
    assert _written(PLAIN) == json.dumps(PLAIN, indent=2) + "\n"
    assert _written([]) == "[]\n" and _written({}) == "{}\n" and _written("x") == '"x"\n'


def test_an_iterator_is_an_array_consumed_as_it_is_written() -> None:
    consumed = []

    def items() -> Iterator[dict[str, Any]]:
        for i in range(3):
            consumed.append(i)
            yield {"subtask": i, "inputs": [[0, i]]}

    out = _written({"outer": {"tasks": items(), "after": 1}, "none": iter(())})
    assert consumed == [0, 1, 2]
    assert json.loads(out) == {"outer": {"tasks": [{"subtask": i, "inputs": [[0, i]]}
                                                   for i in range(3)], "after": 1},
                               "none": []}
    # One line per item, at the depth json.dumps would indent it.
    assert '\n      {"subtask": 1, "inputs": [[0, 1]]},\n' in out
