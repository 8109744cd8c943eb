"""JSON written as it is produced: a plan's per-subtask arrays are never held whole.

At Flink's maximum parallelism the execution and physical layers are tens of megabytes of JSON;
building them as one structure first costs hundreds of megabytes of Python objects.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

INDENT = "  "


def write_json(value: Any, out: TextIO) -> None:
    """Writes ``value`` indented as ``json.dumps(value, indent=2)`` would, and a newline; an
    iterator in it (a lazy array) is written as it is consumed, an item per line."""
    _write(value, out, 0)
    out.write("\n")


def _write(value: Any, out: TextIO, level: int) -> None:
    if isinstance(value, dict) and value:
        separator = "{"
        for key, item in value.items():
            out.write(f"{separator}\n{INDENT * (level + 1)}{json.dumps(key)}: ")
            _write(item, out, level + 1)
            separator = ","
        out.write(f"\n{INDENT * level}}}")
    elif isinstance(value, Iterator):
        separator = "["
        for item in value:  # one line each, by the C encoder: tens of thousands of items
            out.write(f"{separator}\n{INDENT * (level + 1)}{json.dumps(item)}")
            separator = ","
        out.write("[]" if separator == "[" else f"\n{INDENT * level}]")
    else:  # a JSON string never holds a raw newline, so re-indenting each line is safe
        out.write(json.dumps(value, indent=len(INDENT)).replace("\n", "\n" + INDENT * level))
