"""Functions a job defines in Python that executors cannot import by name: lambdas, closures,
partials, bound methods, instances.

The Python API registers each here under a generated name and refers to it as
``dataflow_engine.functions.shipped:<name>``, so the spec and every graph layer see an ordinary
function reference. The physical plan puts the referenced objects into the task descriptors,
which Spark pickles by value (cloudpickle) as it does the functions of hand-written PySpark; a
task installs them here before its operators resolve their functions. A manifest cannot carry
them: the API's ``to_manifest()`` refuses them, naming the operator.
"""

from __future__ import annotations

import itertools
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

from dataflow_engine.functions.references import parse_function_ref

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


#: Objects of the ``__main__`` script named by their importable reference (``job:Fn``): they
#: travel by value too, since importing the script on an executor would run it again.
MAIN: dict[str, Any] = {}


def register_main(reference: str, target: object) -> None:
    MAIN[reference] = target


def collect(references: Iterable[object]) -> dict[str, Any]:
    """The objects among ``references`` that travel by value, by reference."""
    module = sys.modules[MODULE]
    found: dict[str, Any] = {}
    for reference in references:
        if is_shipped(reference):
            assert isinstance(reference, str)
            found[reference] = getattr(module, parse_function_ref(reference).attribute)
        elif isinstance(reference, str) and reference in MAIN:
            found[reference] = MAIN[reference]
    return found


def install(functions: Mapping[str, Any]) -> None:
    """On an executor: makes a task's objects resolvable by their references (a script's own
    module is stood in for by one holding only them, so it is never imported)."""
    for reference, target in functions.items():
        ref = parse_function_ref(reference)
        assert ref.module is not None
        module = sys.modules.get(ref.module)
        if ref.module != MODULE and not getattr(module, _STAND_IN, False):
            module = types.ModuleType(ref.module)
            setattr(module, _STAND_IN, True)
            sys.modules[ref.module] = module
        assert module is not None
        setattr(module, ref.attribute, target)


_STAND_IN = "__dataflow_stand_in__"
