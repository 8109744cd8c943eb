"""PyFlink's ``OutputTag``: names a side output of an operator.

A process function emits to a side output by yielding ``(output_tag, value)``, as in PyFlink;
the graph connects the consumers of ``get_side_output(output_tag)`` by the tag's id.
"""

from __future__ import annotations

from typing import Any


class OutputTag:
    __slots__ = ("tag_id", "type_info")

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError(f"an OutputTag needs a non-empty str id, not {tag_id!r}")
        self.tag_id = tag_id
        #: Accepted as PyFlink's is, not needed: records are pickled Python objects.
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self.tag_id))

    def __reduce__(self) -> tuple[type[OutputTag], tuple[str, Any]]:
        return OutputTag, (self.tag_id, self.type_info)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"
