"""Merging a user's pod template into a generated pod, as Spark merges its pod templates.

Maps merge key by key, containers merge by name, other lists are replaced. Security settings
the ``restricted`` standard requires are applied last, so a template cannot weaken them.
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


def restricted_violations(template: dict[str, Any], path: str) -> list[tuple[str, str]]:
    """Fields of a user template that the ``restricted`` Pod Security Standard forbids."""
    problems: list[tuple[str, str]] = []
    spec = template.get("spec") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            problems.append((f"{path}.spec.{field}", "must not be true"))
    pod_context = spec.get("securityContext") or {}
    if pod_context.get("runAsNonRoot") is False or pod_context.get("runAsUser") == 0:
        problems.append((f"{path}.spec.securityContext", "pods must run as non-root"))
    for i, volume in enumerate(spec.get("volumes") or []):
        if isinstance(volume, dict) and "hostPath" in volume:
            problems.append((f"{path}.spec.volumes[{i}].hostPath", "hostPath is not allowed"))
    for kind in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(kind) or []):
            context = (container or {}).get("securityContext") or {}
            at = f"{path}.spec.{kind}[{i}].securityContext"
            if context.get("privileged"):
                problems.append((f"{at}.privileged", "must not be true"))
            if context.get("allowPrivilegeEscalation"):
                problems.append((f"{at}.allowPrivilegeEscalation", "must not be true"))
            if context.get("runAsNonRoot") is False or context.get("runAsUser") == 0:
                problems.append((f"{at}.runAsUser", "containers must run as non-root"))
            if (context.get("capabilities") or {}).get("add"):
                problems.append((f"{at}.capabilities.add", "no capabilities may be added"))
    return problems
