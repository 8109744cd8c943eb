"""Function references: checked by syntax at compile time, imported only on the executors."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dataflow_engine.functions.library import BUILTINS

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_REFERENCE = re.compile(rf"^(?P<module>{_IDENT}(?:\.{_IDENT})*):(?P<attribute>{_IDENT})$")
_BUILTIN_NAME = re.compile(rf"^{_IDENT}$")


@dataclass(frozen=True)
class FunctionRef:
    """Either a built-in (``module`` is None) or ``module:attribute``."""

    module: str | None
    attribute: str

    def __str__(self) -> str:
        return self.attribute if self.module is None else f"{self.module}:{self.attribute}"

    @property
    def is_builtin(self) -> bool:
        return self.module is None


def parse_function_ref(text: str) -> FunctionRef:
    """Parses a reference without importing anything; raises ValueError saying what is wrong."""
    match = _REFERENCE.match(text)
    if match:
        return FunctionRef(match["module"], match["attribute"])
    if ":" not in text and _BUILTIN_NAME.match(text):
        if text not in BUILTINS:
            known = ", ".join(sorted(BUILTINS))
            raise ValueError(f"unknown built-in function {text!r} (built-ins: {known})")
        return FunctionRef(None, text)
    raise ValueError(
        f"malformed function reference {text!r}: expected 'package.module:callable' "
        "or a built-in name"
    )


def is_function_ref(text: str) -> bool:
    """True for text shaped like ``module:callable`` (keyBy tells refs from field names so)."""
    return _REFERENCE.match(text) is not None


def resolve(ref: FunctionRef) -> Callable[..., Any]:
    """Imports the referenced callable. Runtime only: the compiler never calls this."""
    if ref.module is None:
        return BUILTINS[ref.attribute].function
    try:
        module = importlib.import_module(ref.module)
    except ImportError as exc:
        raise ImportError(f"cannot import module {ref.module!r} of function {ref}: {exc}") from exc
    try:
        target = getattr(module, ref.attribute)
    except AttributeError:
        raise ImportError(f"module {ref.module!r} has no attribute {ref.attribute!r}") from None
    if not callable(target) and ref.module != "dataflow_engine.functions.shipped":
        raise TypeError(f"{ref} is not callable")
    return target  # type: ignore[no-any-return]
