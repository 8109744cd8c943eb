"""Placeholders for PyFlink names this engine does not support yet: they import, and refuse
on use.

A PyFlink program imports names it may never use (a state backend kept from a template, a
connector behind a flag). A missing name would stop such a program with an ImportError that
says nothing; a placeholder imports, can be subclassed or subscripted in annotations, and
raises :class:`NotSupportedError` saying what to do instead once the program really uses it.
Why each name is refused is in :data:`~dataflow_engine.api._refusals.REASONS`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from dataflow_engine.api._refusals import REASONS

_PYFLINK = "pyflink."
_API = "dataflow_engine.api."


class NotSupportedError(NotImplementedError):
    """A PyFlink name this engine does not support yet; the message says what to do instead."""


def api_module(pyflink_module: str) -> str:
    """Where a PyFlink module's names are here: ``pyflink.X.Y`` is ``dataflow_engine.api.X.Y``."""
    if not pyflink_module.startswith(_PYFLINK):
        raise ValueError(f"{pyflink_module!r} is not a pyflink module")
    return _API + pyflink_module.removeprefix(_PYFLINK)


def message(pyflink_name: str) -> str:
    return (f"{pyflink_name} is not supported yet by dataflow_engine.api: "
            f"{REASONS[pyflink_name]}")


class _Refused(type):
    """The placeholders' metaclass: creating one (or a subclass) or reading a public class
    attribute raises; private names stay AttributeErrors, as ``typing``, ``pickle`` and
    ``inspect`` probe for them."""

    pyflink_name: str

    def __call__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotSupportedError(message(cls.pyflink_name))

    def __getattr__(cls, name: str) -> NoReturn:
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotSupportedError(message(cls.pyflink_name))

    def __getitem__(cls, parameters: object) -> _Refused:
        """``AsyncFunction[IN, OUT]``: PyFlink's generic classes are subscripted in
        annotations and base classes; the subscript changes nothing here."""
        return cls

    def __repr__(cls) -> str:
        return f"<refused {cls.pyflink_name}>"


def refused(pyflink_name: str) -> Any:
    """The placeholder of ``pyflink_name`` (a key of REASONS), as a class of the module a
    program imports it from here."""
    if pyflink_name not in REASONS:
        raise KeyError(f"{pyflink_name} has no reason in api/_refusals.py")
    module, _, name = pyflink_name.rpartition(".")
    return _Refused(name, (), {"pyflink_name": pyflink_name, "__module__": api_module(module),
                               "__doc__": message(pyflink_name)})


def is_refused(value: object) -> bool:
    return isinstance(value, _Refused)


def refused_name(value: object) -> str:
    """The PyFlink name a placeholder stands for (its own, for a program's subclass too)."""
    if not isinstance(value, _Refused):
        raise TypeError(f"{value!r} is not a refused PyFlink name")
    return value.pyflink_name
