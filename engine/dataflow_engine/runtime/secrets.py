"""Reading the values of Secret references (:mod:`dataflow_engine.spec.secret_refs`) where they are
used, and nowhere else.

The driver reads each referenced key from ``$DATAFLOW_SECRETS_DIR/<name>/<key>`` (where the
operator mounts the Secret, or the local backend writes it, mode 0600) once at the start of a
run, and hands the values to its tasks with the task itself, so executors mount no Secret. The
values live in memory only: never in the plan, a log line, the status or a checkpoint, which keep
the reference.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from dataflow_engine.errors import SpecError
from dataflow_engine.rest.endpoints import DEFAULT_SECRETS_DIR, SECRETS_DIR_ENV
from dataflow_engine.spec.secret_refs import (
    SecretKeySelector,
    SecretKeySource,
    SettingValue,
)


class SecretValues:
    """The values of a run's Secret references, by (name, key); its repr shows no value."""

    def __init__(self, values: Mapping[tuple[str, str], str] | None = None) -> None:
        self._values = dict(values or {})

    def __repr__(self) -> str:
        return f"SecretValues({len(self._values)} keys)"

    def __bool__(self) -> bool:
        return bool(self._values)

    def value(self, ref: SecretKeySelector) -> str:
        try:
            return self._values[(ref.name, ref.key)]
        except KeyError:
            raise SpecError.single("secretKeyRef", f"key {ref.key!r} of Secret {ref.name!r} "
                                   "was not given to this process") from None

    def resolve(self, settings: Mapping[str, SettingValue]) -> dict[str, str]:
        """`settings` with every reference replaced by its value."""
        return {key: self.value(value.secret_key_ref) if isinstance(value, SecretKeySource)
                else value for key, value in settings.items()}


def read_secrets(refs: Iterable[SecretKeySelector],
                 directory: str | None = None) -> SecretValues:
    """The referenced keys, read from the secrets directory; a missing one fails naming it."""
    root = Path(directory or os.environ.get(SECRETS_DIR_ENV) or DEFAULT_SECRETS_DIR)
    values = {}
    for ref in refs:
        path = root / ref.name / ref.key
        try:
            values[(ref.name, ref.key)] = path.read_text(encoding="utf-8")
        except OSError as error:
            raise SpecError.single("secretKeyRef", f"key {ref.key!r} of Secret {ref.name!r} "
                                   f"cannot be read from {path} ({error.strerror}): the "
                                   "Secret or the key does not exist, or it is not mounted "
                                   f"(${SECRETS_DIR_ENV})") from None
    return SecretValues(values)


#: The values this process was given: the driver's (read_secrets) or a task's (with the task).
_installed = SecretValues()


def install(values: SecretValues) -> None:
    global _installed
    _installed = values


def installed() -> SecretValues:
    return _installed


def resolve(settings: Mapping[str, SettingValue]) -> dict[str, str]:
    """`settings` as a client needs them, from the values installed in this process."""
    return _installed.resolve(settings)
