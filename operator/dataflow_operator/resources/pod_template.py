"""Merging a user's pod template into a generated pod, as Spark merges its pod templates.

Maps merge key by key, containers merge by name, other lists are replaced. What a template may
set at all is checked first (:mod:`dataflow_engine.compiler.policy`): nothing that changes where
or as whom the pod runs, nothing below the ``restricted`` Pod Security Standard.
"""

from __future__ import annotations

import copy
from typing import Any

_NAMED_LISTS = {"containers", "initContainers", "volumes", "env", "volumeMounts", "ports"}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(base)
    for key, value in override.items():
        current = result.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            result[key] = merge(current, value)
        elif key in _NAMED_LISTS and isinstance(current, list) and isinstance(value, list):
            result[key] = _merge_named(current, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _merge_named(base: list[Any], override: list[Any]) -> list[Any]:
    merged = [copy.deepcopy(item) for item in base]
    index = {item.get("name"): i for i, item in enumerate(merged) if isinstance(item, dict)}
    for item in override:
        name = item.get("name") if isinstance(item, dict) else None
        if name in index:
            merged[index[name]] = merge(merged[index[name]], item)
        else:
            merged.append(copy.deepcopy(item))
    return merged
