"""Status writes are JSON merge patches: keys a new status no longer has must be removed."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_operator.kube import merge_patch_between

pytestmark = pytest.mark.unit


def _apply(target: Any, patch: Any) -> Any:
    """RFC 7386's MergePatch, as the API server applies it."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _apply(result.get(key), value)
    return result


@pytest.mark.parametrize("before", [
    None,
    {"plan": {"slots": {"default": 2, "heavy": 4}, "hash": "a"}, "error": "boom"},
    {"plan": {"slots": {"default": 2}}, "vertices": [{"states": {"RUNNING": 3}}]},
])
def test_the_patch_turns_the_old_status_into_the_new_one(before: dict[str, Any] | None) -> None:
    after = {"plan": {"slots": {"default": 3}, "hash": "b"}, "error": None,
             "vertices": [{"states": {"FINISHED": 3}}]}
    written = _apply(before or {}, merge_patch_between(before, after))
    assert written == _apply({}, after)
    assert "heavy" not in written["plan"]["slots"]
