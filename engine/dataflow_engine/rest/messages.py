"""What every message between the operator and a driver shares: camelCase JSON names, the
protocol version, and tolerant parsing.

A message is a frozen pydantic model whose Python names are snake_case and whose JSON names
are their camelCase aliases (the wire names the driver has always written). Within a protocol
version fields are only ever added, never renamed or removed; a document of another version,
or one that does not fit its model, is not guessed at: :func:`parse_message` answers None, so
an operator tolerates a driver of another release by ignoring what it cannot read.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic.alias_generators import to_camel

#: The version of this protocol, in every top-level message (``schemaVersion``). Bumped when a
#: field is renamed or removed, or changes meaning; adding a field keeps it.
PROTOCOL_VERSION = 1


class Model(BaseModel):
    """A part of a message: camelCase on the wire, snake_case in Python, immutable; fields a
    newer peer added are ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True,
                              extra="ignore")

    def to_json(self) -> dict[str, Any]:
        """The JSON object sent on the wire (wire names, enums as their values)."""
        return self.model_dump(mode="json", by_alias=True)


class Message(Model):
    """A whole request, answer or document: it carries the protocol version it was written
    in, and only that version is read (a message without one is taken as this version)."""

    schema_version: int = PROTOCOL_VERSION

    @field_validator("schema_version")
    @classmethod
    def _this_version(cls, version: int) -> int:
        if version != PROTOCOL_VERSION:
            raise ValueError(f"protocol version {version}; this side speaks "
                             f"{PROTOCOL_VERSION}")
        return version


class ErrorResponse(Message):
    """The answer to a request the driver refused (any status but 2xx), as Flink's
    ErrorResponseBody."""

    error: str


M = TypeVar("M", bound=Message)


def parse_message(model: type[M], document: object) -> M | None:
    """``document`` (a decoded JSON value) as a ``model``, or None when it is not one: not an
    object, another protocol version, or fields missing or of the wrong type."""
    if not isinstance(document, dict):
        return None
    try:
        return model.model_validate(document)
    except ValidationError:
        return None
