"""Spark settings as ``spark-defaults.conf`` lines: the grammar a setting must have, and the one
writer of the file.

Spark reads the file with ``java.util.Properties``, where a key ends at the first ``=``, ``:``
or white space and a line break starts another setting. So a key or value carrying those could
set what its author may not (``"spark.kubernetes.namespace="``, ``"1\\nspark.master x"``). Keys
are held to a grammar with none of them, values to no control characters, and the writer
refuses (rather than escapes its way around) anything that would not read back as one setting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: A setting's key: what Spark's own keys look like.
KEY_PATTERN = re.compile(r"^spark\.[A-Za-z0-9_.\-]+$")
#: Label, annotation and node-selector settings end in a Kubernetes qualified name, which may
#: have one ``/`` (``spark.kubernetes.executor.label.app.kubernetes.io/name``).
QUALIFIED_KEY_PREFIXES = (
    "spark.kubernetes.driver.label.", "spark.kubernetes.executor.label.",
    "spark.kubernetes.driver.annotation.", "spark.kubernetes.executor.annotation.",
    "spark.kubernetes.node.selector.", "spark.kubernetes.driver.node.selector.",
    "spark.kubernetes.executor.node.selector.",
)
QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def qualified_suffix(key: str) -> str | None:
    """The label, annotation or node-selector name a setting names, or None."""
    for prefix in QUALIFIED_KEY_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix):]
    return None


def key_problem(key: str) -> str | None:
    suffix = qualified_suffix(key)
    if suffix is not None:
        if QUALIFIED_NAME.match(suffix):
            return None
        return (f"{suffix!r} is not a Kubernetes qualified name ([prefix/]name of letters, "
                "digits, '-', '_' and '.')")
    if KEY_PATTERN.match(key):
        return None
    return "a Spark setting's key is 'spark.' followed by letters, digits, '_', '-' and '.'"


def value_problem(value: str) -> str | None:
    if _CONTROL.search(value):
        return "a Spark setting's value may not contain control characters (line breaks, tabs)"
    return None


def spark_defaults(conf: Mapping[str, str]) -> str:
    """The ``spark-defaults.conf`` text of `conf`, one line a setting, sorted by key."""
    lines = []
    for key, value in sorted(conf.items()):
        problem = key_problem(key) or value_problem(value)
        if problem is not None:
            raise ValueError(f"Spark setting {key!r}: {problem}")
        # A backslash is the one character of a valid setting that Properties reads specially.
        escaped = value.replace("\\", "\\\\")
        lines.append(f"{key}={escaped}\n")
    return "".join(lines)
