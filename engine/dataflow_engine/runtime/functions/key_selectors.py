"""keyBy selectors: a tuple index, a mapping field name, or a ``module:callable``."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from dataflow_engine.functions.references import is_function_ref
from dataflow_engine.runtime.functions.udf import load_user_function


def key_field(key_by: int | str) -> int | str | None:
    """The field a key selector reads, or None for a function (callers inline field reads)."""
    if isinstance(key_by, str) and is_function_ref(key_by):
        return None
    return key_by


def key_selector(key_by: int | str) -> Callable[[Any], Any]:
    field = key_field(key_by)
    if field is not None:
        return itemgetter(field)
    assert isinstance(key_by, str)
    return load_user_function(key_by, "get_key").call
