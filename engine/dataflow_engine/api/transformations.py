"""The API's internal operator graph, turned into spec operators only when a spec is built.

Streams point at these objects rather than at names, so ``.name()`` can rename an operator
after consumers were attached, as in Flink, where names are labels and not references.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dataflow_engine.spec.catalog import Category, kind_of
from dataflow_engine.spec.model import NAME_PATTERN, OperatorType, Partitioning
from dataflow_engine.types.typeinfo import TypeInformation, type_text


@dataclass(eq=False)
class Transformation:
    """One operator: Flink's Transformation. Identity matters (two maps may look alike)."""

    id: int
    type: OperatorType
    inputs: list[Input] = field(default_factory=list)
    function: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    uid: str | None = None
    parallelism: int | None = None
    max_parallelism: int | None = None
    slot_sharing_group: str | None = None
    start_new_chain: bool = False
    disable_chaining: bool = False
    #: The spec's ``watermarkStrategy`` of a 'timestamps' operator (camelCase data).
    watermark_strategy: dict[str, Any] | None = None
    #: The spec's ``window`` of a window operator (camelCase data).
    window: dict[str, Any] | None = None
    #: The spec's ``intervalJoin`` of an interval join (camelCase data).
    interval_join: dict[str, Any] | None = None
    #: The spec's ``broadcastStates`` of a broadcast_process.
    broadcast_states: list[str] | None = None
    #: The declared type of its records (PyFlink's ``output_type``/``type_info``).
    output_type: TypeInformation | None = None

    @property
    def is_virtual(self) -> bool:
        return kind_of(self.type).category is Category.UNION

    @property
    def auto_name(self) -> str:
        return f"{self.type.value}-{self.id}"


@dataclass(frozen=True, eq=False)
class Input:
    """An edge: partitioning belongs to it, not to either operator."""

    upstream: Transformation
    partitioning: Partitioning | None = None
    key_by: int | str | None = None
    #: Read the upstream's side output with this OutputTag id.
    side_output: str | None = None
    #: How the keys of a keyBy edge hash (PyFlink's key type).
    key_type: TypeInformation | None = None


def reachable(transformations: Iterable[Transformation]) -> list[Transformation]:
    """Operators that end up in the job, in creation order.

    As in Flink, only real operators and what feeds them count: a source or a union nobody
    consumes is dropped rather than reported.
    """
    seen: dict[int, Transformation] = {}
    stack = [t for t in transformations
             if kind_of(t.type).category in (Category.TRANSFORMATION, Category.SINK)]
    while stack:
        current = stack.pop()
        if current.id not in seen:
            seen[current.id] = current
            stack.extend(i.upstream for i in current.inputs)
    return [seen[i] for i in sorted(seen)]


def assign_names(operators: list[Transformation]) -> dict[Transformation, str]:
    """Each operator's spec name: its own (``.name()``), else ``<type>-<id>``. Flink's names
    are labels that several operators may share; the spec's identify operators, so a name
    given again gets ``-2``, ``-3``... in the program's order, and generated names avoid
    every given one."""
    given = {op.name for op in operators if op.name is not None}
    used: set[str] = set()
    names: dict[Transformation, str] = {}
    for op in operators:  # given names first, so that they keep them
        if op.name is not None:
            names[op] = op.name if op.name not in used else _free(op.name, used | given)
            used.add(names[op])
    for op in operators:
        if op.name is None:
            names[op] = _free(op.auto_name, used)
            used.add(names[op])
    return {op: names[op] for op in operators}


def _free(name: str, taken: set[str]) -> str:
    """``name`` if not taken, else ``name-N`` with the least free N >= 2 (within the 63
    characters of a spec name)."""
    candidate, number = name, 2
    while candidate in taken:
        tail = f"-{number}"
        candidate, number = f"{name[:63 - len(tail)]}{tail}", number + 1
    return candidate


def operator_data(op: Transformation, names: dict[Transformation, str]) -> dict[str, Any]:
    """The operator in wire form (camelCase), leaving out what is unset."""
    data: dict[str, Any] = {"name": names[op], "type": op.type.value}
    if op.inputs:
        data["inputs"] = [_input_data(i, names) for i in op.inputs]
    if op.function is not None:
        data["function"] = op.function
    if op.args:
        data["args"] = dict(op.args)
    optional = (("parallelism", op.parallelism), ("maxParallelism", op.max_parallelism),
                ("slotSharingGroup", op.slot_sharing_group), ("uid", op.uid))
    data.update((key, value) for key, value in optional if value is not None)
    if op.start_new_chain:
        data["startNewChain"] = True
    if op.disable_chaining:
        data["disableChaining"] = True
    if op.watermark_strategy is not None:
        data["watermarkStrategy"] = dict(op.watermark_strategy)
    if op.window is not None:
        data["window"] = dict(op.window)
    if op.interval_join is not None:
        data["intervalJoin"] = dict(op.interval_join)
    if op.broadcast_states is not None:
        data["broadcastStates"] = list(op.broadcast_states)
    if op.output_type is not None:
        data["outputType"] = type_text(op.output_type)
    return data


def _input_data(edge: Input, names: dict[Transformation, str]) -> dict[str, Any]:
    data: dict[str, Any] = {"from": names[edge.upstream]}
    if edge.partitioning is not None:
        data["partitioning"] = edge.partitioning.value
    if edge.key_by is not None:
        data["keyBy"] = edge.key_by
    if edge.side_output is not None:
        data["sideOutput"] = edge.side_output
    if edge.key_type is not None:
        data["keyType"] = type_text(edge.key_type)
    return data


def declared_type(value: object, what: str = "output_type") -> TypeInformation | None:
    """A type given to an operator (``Types.TUPLE([...])``...), checked at the call."""
    if value is None or isinstance(value, TypeInformation):
        return value
    raise TypeError(f"{what} must be a TypeInformation such as Types.STRING() or "
                    f"Types.TUPLE([...]), not {type(value).__name__} {value!r}")


def check_count(value: object, what: str, upper: int | None = None) -> int:
    """An eager check of a parallelism-like setting, so the error points at the call."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < 1 or (upper is not None and value > upper):
        bound = f"between 1 and {upper}" if upper is not None else ">= 1"
        raise ValueError(f"{what} must be {bound}, not {value}")
    return value


def operator_name(value: object) -> str:
    """The spec name of an operator PyFlink names with any text ("kafka source"): Flink's
    names are labels, the spec's identify operators, so other characters become '-'."""
    if not isinstance(value, str):
        raise TypeError(f"operator name must be a str, not {type(value).__name__}")
    if re.match(NAME_PATTERN, value):
        return value
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", value)[:63].strip("-._")
    if not name:
        raise ValueError(f"operator name {value!r} has no letter or digit to name it by")
    return name


def check_name(value: object, what: str) -> str:
    """Operator and group names are identifiers in the spec, so they must match NAME_PATTERN."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if not re.match(NAME_PATTERN, value):
        raise ValueError(f"{what} {value!r} is not valid: use 1-63 letters, digits, '-', '_' "
                         "or '.', starting and ending with a letter or digit")
    return value
