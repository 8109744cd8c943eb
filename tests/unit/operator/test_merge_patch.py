"""Status writes are JSON merge patches: keys a new status no longer has must be removed."""

from __future__ import annotations

from typing import Any

import pytest
from operator_fakes import merge_patch

from dataflow_operator.kube import merge_patch_between

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("before", [
    None,
    {"plan": {"slots": {"default": 2, "heavy": 4}, "hash": "a"}, "error": "boom"},
    {"plan": {"slots": {"default": 2}}, "vertices": [{"states": {"RUNNING": 3}}]},
])
def test_the_patch_turns_the_old_status_into_the_new_one(before: dict[str, Any] | None) -> None:
    after = {"plan": {"slots": {"default": 3}, "hash": "b"}, "error": None,
             "vertices": [{"states": {"FINISHED": 3}}]}
    written = merge_patch(before or {}, merge_patch_between(before, after))
    assert written == merge_patch({}, after)
    assert "heavy" not in written["plan"]["slots"]
