"""User functions as the runtime calls them: resolved on the executor, rich or plain.

A reference names a built-in or ``module:callable``. When the callable is a class that defines
the operator's method (``map``, ``flat_map``, ``filter``, ``reduce``, ``process_element``,
``get_key``), ``open``/``close`` or ``__call__``, each subtask gets its own instance: a rich
function, whose ``open(ctx)`` receives the :class:`~.context.RuntimeContext`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dataflow_engine.functions.references import parse_function_ref, resolve
from dataflow_engine.runtime.functions.context import RuntimeContext


@dataclass(frozen=True, slots=True)
class UserFunction:
    call: Callable[..., Any]
    open: Callable[[RuntimeContext], Any] | None = None
    close: Callable[[], Any] | None = None
    #: The function object itself, for operators calling more than one of its methods.
    instance: Any = None

    @property
    def is_rich(self) -> bool:
        return self.open is not None or self.close is not None


def _is_function_class(target: type, method: str) -> bool:
    return (any(hasattr(target, name) for name in (method, "open", "close"))
            or "__call__" in vars(target))


def _hook(target: Any, name: str) -> Any:
    """``open``/``close`` of a function, unless it is a base class's empty default."""
    hook = getattr(target, name, None)
    return None if getattr(hook, "is_default_hook", False) else hook


def load_user_function(reference: str, method: str) -> UserFunction:
    """Imports ``reference`` (executor side only) and binds the method the operator calls."""
    target: Any = resolve(parse_function_ref(reference))
    if isinstance(target, type) and _is_function_class(target, method):
        target = target()
    call = getattr(target, method, None)
    if call is None:
        if not callable(target):
            raise TypeError(f"function {reference} has no method {method!r} and is not callable")
        call = target
    open_fn = _hook(target, "open")
    close_fn = _hook(target, "close")
    return UserFunction(call,
                        open_fn if callable(open_fn) else None,
                        close_fn if callable(close_fn) else None,
                        target)

