"""Turning Python callables into the spec's function references.

A spec names functions by text (a built-in name or ``module:callable``) because executors are
separate processes that import them. A callable that cannot be found again by that name (a
lambda, a nested function, a bound method, a ``functools.partial``, an instance) is shipped by
value instead (:mod:`dataflow_engine.functions.shipped`), as PySpark ships its functions: such
a job runs from Python, and ``to_manifest()`` says, per operator, why it needs an importable
function.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import keyword
import sys
from pathlib import Path
from types import ModuleType

from dataflow_engine.functions import shipped
from dataflow_engine.functions.library import BUILTINS
from dataflow_engine.spec.model import OperatorType

_ADVICE = (
    "a manifest names functions that executors import. Define it with 'def' (or 'class') at "
    "the top level of an importable module, or pass a 'module:callable' string or a built-in "
    "name such as 'split_words'"
)


class UnshippableFunctionError(TypeError):
    """A callable that executors could not import by name (it is shipped by value instead)."""


def function_reference(func: object, operator_type: OperatorType | None = None,
                       what: str = "function") -> str:
    """The spec reference of ``func``: a string as given, a built-in name, or ``module:callable``.

    A built-in from :mod:`dataflow_engine.functions.library` becomes its short name when it fits
    ``operator_type``, so manifests written by hand and by the API read the same.
    """
    if isinstance(func, str):
        return func
    for name, builtin in BUILTINS.items():
        if builtin.function is func and operator_type in builtin.fits:
            return name
    return _reference(func, what)


def key_selector_reference(key: object) -> int | str:
    """A keyBy value: a field index, a field name, or a ``module:callable`` key selector.

    Callables always become ``module:callable``: a bare name would be read as a field name.
    """
    if isinstance(key, bool):
        raise TypeError(f"key selector {key!r}: expected a field index, a field name or a "
                        "top-level function, not a bool")
    if isinstance(key, int):
        if key < 0:
            raise ValueError(f"key selector {key}: a field index must be >= 0")
        return key
    if isinstance(key, str):
        return key
    return _reference(key, "key selector")


def _reference(func: object, what: str) -> str:
    """``module:callable`` when executors can import ``func`` so, else a shipped reference.

    An instance without state of its own (PyFlink programs pass ``MyFunction()``) is named by
    its class: the runtime makes one instance of a function class per subtask anyway."""
    if _stateless_instance(func):
        try:
            module_name, qualname = _locate(type(func), what)
        except UnshippableFunctionError:
            pass
        else:
            return _named(type(func), f"{module_name}:{qualname}")
    try:
        module_name, qualname = _locate(func, what)
    except UnshippableFunctionError as reason:
        return shipped.register(func, str(reason))
    return _named(func, f"{module_name}:{qualname}")


def _named(target: object, reference: str) -> str:
    """The reference of an importable object; one of the ``__main__`` script also travels by
    value, so executors never import (and so re-run) the script."""
    if getattr(target, "__module__", None) == "__main__":
        shipped.register_main(reference, target)
    return reference


def _stateless_instance(func: object) -> bool:
    if isinstance(func, type) or inspect.isroutine(func) or isinstance(func, functools.partial):
        return False
    if type(func).__module__ == "builtins":
        return False
    return not getattr(func, "__dict__", None) and not getattr(type(func), "__slots__", ())


def _locate(func: object, what: str) -> tuple[str, str]:
    """``(module, name)`` such that importing the module and taking the name yields ``func``."""

    def fail(reason: str) -> UnshippableFunctionError:
        return UnshippableFunctionError(
            f"{what} {_label(func)} must be an importable top-level function or class "
            f"(module:callable), but {reason}; {_ADVICE}.")

    if isinstance(func, functools.partial):
        raise fail("it is a functools.partial")
    if inspect.ismethod(func):
        raise fail("it is a bound method")
    if inspect.isbuiltin(func) and not isinstance(getattr(func, "__self__", None), ModuleType):
        raise fail("it is a bound method")
    if not (inspect.isfunction(func) or inspect.isclass(func) or inspect.isbuiltin(func)):
        if not callable(func) and type(func).__module__ == "builtins":
            raise TypeError(f"{what} must be callable, a function object or a reference "
                            f"string, not {type(func).__name__}")
        raise fail(f"it is an instance of {type(func).__qualname__}")
    name: str = getattr(func, "__name__", "")
    qualname: str = getattr(func, "__qualname__", name)
    module_name: str | None = getattr(func, "__module__", None)
    if name == "<lambda>":
        raise fail("it is a lambda")
    if "<locals>" in qualname:
        raise fail("it is defined inside a function")
    if "." in qualname:
        raise fail(f"it is not at the top level of its module (its name is {qualname!r})")
    if module_name is None:
        raise fail("it belongs to no module")
    module: ModuleType | None
    if module_name == "__main__":
        module = sys.modules.get("__main__")
        importable = _main_module_name()
        if importable is None:
            raise fail("it is defined in a __main__ that cannot be imported by name (an "
                       "interactive session, 'python -c', or a script whose file name is not "
                       "an importable module name)")
        module_name = importable
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise fail(f"its module {module_name!r} cannot be imported ({exc})") from None
    if module is None or getattr(module, qualname, None) is not func:
        raise fail(f"{module_name}:{qualname} is not this object (was it redefined, or "
                   "replaced by a decorator without functools.wraps?)")
    return module_name, qualname


def _main_module_name() -> str | None:
    """The name under which ``__main__``'s code is importable, or None.

    ``python -m pkg.mod`` records ``pkg.mod`` in ``__main__.__spec__``. A script run directly
    (``python job.py``) is importable as ``job`` when that name finds the same file, which is the
    case when the script's directory is on ``sys.path`` (Python puts it first); executors must
    then have that directory on their path too. Nothing is imported: importing a script would
    run its top-level code a second time.
    """
    main = sys.modules.get("__main__")
    if main is None:
        return None
    spec = getattr(main, "__spec__", None)
    spec_name = getattr(spec, "name", None)
    if isinstance(spec_name, str) and spec_name and spec_name != "__main__":
        return spec_name
    file = getattr(main, "__file__", None)
    if not isinstance(file, str) or not file:
        return None
    path = Path(file).resolve()
    stem = path.stem
    if path.suffix != ".py" or not stem.isidentifier() or keyword.iskeyword(stem):
        return None
    loaded = sys.modules.get(stem)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
    else:
        try:
            found = importlib.util.find_spec(stem)
        except (ImportError, ValueError):
            return None
        origin = found.origin if found is not None else None
    if not isinstance(origin, str) or Path(origin).resolve() != path:
        return None
    return stem


def _label(func: object) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return repr(name) if isinstance(name, str) else repr(func)
