"""Built-in functions, referenced by name from a manifest so common jobs need no user code.

The compiler only reads :data:`BUILTINS`'s names and the operator types each fits; the runtime
calls the functions. Everything here is a plain top-level function, so it pickles by reference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from dataflow_engine.spec.model import OperatorType

_WORD = re.compile(r"\w+")


def split_words(line: str) -> Iterator[tuple[str, int]]:
    """Flink's WordCount Tokenizer: lower-case words of a line, each paired with 1."""
    for word in _WORD.findall(line.lower()):
        yield (word, 1)


def split_lines(text: str) -> Iterator[str]:
    yield from text.splitlines()


def identity(value: Any) -> Any:
    return value


def lower(value: str) -> str:
    return value.lower()


def upper(value: str) -> str:
    return value.upper()


def with_one(value: Any) -> tuple[Any, int]:
    """``x -> (x, 1)``: the pairing step of a count."""
    return (value, 1)


def to_string(value: Any) -> str:
    return str(value)


def square(value: int) -> int:
    return value * value


def non_empty(value: Any) -> bool:
    return bool(value)


def is_even(value: int) -> bool:
    return value % 2 == 0


def is_odd(value: int) -> bool:
    return value % 2 == 1


def count_above_one(pair: tuple[Any, int]) -> bool:
    """Keeps ``(key, count)`` pairs seen more than once."""
    return pair[1] > 1


def sum_counts(a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
    """Reduce function of ``(key, count)`` pairs."""
    return (a[0], a[1] + b[1])


def add(a: Any, b: Any) -> Any:
    return a + b


@dataclass(frozen=True)
class Builtin:
    function: Callable[..., Any]
    fits: frozenset[OperatorType]
    doc: str


def _builtin(function: Callable[..., Any], *types: OperatorType) -> tuple[str, Builtin]:
    doc = (function.__doc__ or function.__name__).strip().splitlines()[0]
    return function.__name__, Builtin(function, frozenset(types), doc)


_T = OperatorType
BUILTINS: dict[str, Builtin] = dict(
    [
        _builtin(split_words, _T.FLAT_MAP),
        _builtin(split_lines, _T.FLAT_MAP),
        _builtin(identity, _T.MAP),
        _builtin(lower, _T.MAP),
        _builtin(upper, _T.MAP),
        _builtin(with_one, _T.MAP),
        _builtin(to_string, _T.MAP),
        _builtin(square, _T.MAP),
        _builtin(non_empty, _T.FILTER),
        _builtin(is_even, _T.FILTER),
        _builtin(is_odd, _T.FILTER),
        _builtin(count_above_one, _T.FILTER),
        _builtin(sum_counts, _T.REDUCE),
        _builtin(add, _T.REDUCE),
    ]
)
