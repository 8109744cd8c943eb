"""Functions a job defines in Python that executors cannot import by name: lambdas, closures,
partials, bound methods, instances.

The Python API registers each here under a generated name and refers to it as
``dataflow_engine.shipped:<name>``, so the spec and every graph layer see an ordinary function
reference. The physical plan puts the referenced objects into the task descriptors, which Spark
pickles by value (cloudpickle) as it does the functions of hand-written PySpark; a task installs
them here before its operators resolve their functions. A manifest cannot carry them: the API's
``to_manifest()`` refuses them, naming the operator.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from dataflow_engine.functions import parse_function_ref

MODULE = __name__
_names = itertools.count(1)
#: Why each registered function could not be referred to by name (for to_manifest's error).
REASONS: dict[str, str] = {}


def register(function: object, reason: str) -> str:
    """Keeps ``function`` (a callable, or a function object such as a KeyedProcessFunction
    instance) in this module; returns its reference."""
    label = getattr(function, "__name__", type(function).__name__)
    name = f"f{next(_names)}_{''.join(c if c.isalnum() else '_' for c in label)}"
    setattr(sys.modules[MODULE], name, function)
    REASONS[name] = reason
    return f"{MODULE}:{name}"


def is_shipped(reference: object) -> bool:
    return isinstance(reference, str) and reference.startswith(f"{MODULE}:")


def collect(references: Iterable[object]) -> dict[str, Any]:
    """The shipped functions among ``references``, by name, to travel with a task."""
    module = sys.modules[MODULE]
    found: dict[str, Any] = {}
    for reference in references:
        if is_shipped(reference):
            assert isinstance(reference, str)
            name = parse_function_ref(reference).attribute
            found[name] = getattr(module, name)
    return found


def install(functions: Mapping[str, Any]) -> None:
    """On an executor: makes a task's shipped functions resolvable by their references."""
    module = sys.modules[MODULE]
    for name, function in functions.items():
        setattr(module, name, function)
