"""The compact per-subtask encoding of ``status.vertices[]``.

States are one letter per subtask (see ``STATE_LETTERS``); numbers are run-length encoded
comma lists, ``value*count`` for runs, and record counts are written in base 36. At 1,000
subtasks a vertex's detail is a few KiB even when every count differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dataflow_engine.graph.states import ExecutionState
from dataflow_operator.status.model import STATE_LETTERS

_STATE_OF_LETTER = {letter: state for state, letter in STATE_LETTERS.items()}
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def encode_states(states: Iterable[ExecutionState]) -> str:
    return "".join(STATE_LETTERS[s] for s in states)


def decode_states(text: str) -> list[ExecutionState]:
    return [_STATE_OF_LETTER[c] for c in text]


def _base36(value: int) -> str:
    if value == 0:
        return "0"
    digits = []
    while value:
        value, rest = divmod(value, 36)
        digits.append(_DIGITS[rest])
    return "".join(reversed(digits))


def encode_runs(values: Sequence[int], base36: bool = False) -> str:
    """``[0, 0, 0, 5, 0]`` -> ``0*3,5,0``."""
    spell = _base36 if base36 else str
    parts = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        count = j - i + 1
        parts.append(spell(values[i]) + (f"*{count}" if count > 1 else ""))
        i = j + 1
    return ",".join(parts)


def decode_runs(text: str, base36: bool = False) -> list[int]:
    values: list[int] = []
    if not text:
        return values
    for part in text.split(","):
        value, _, count = part.partition("*")
        number = int(value, 36 if base36 else 10)
        values.extend([number] * (int(count) if count else 1))
    return values
