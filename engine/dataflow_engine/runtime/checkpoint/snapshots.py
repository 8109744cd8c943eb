"""What a subtask snapshots at the end of an epoch, and how a snapshot is handed to the
subtasks of the next run, whatever their parallelism.

As in Flink, an operator's state has two parts. *Keyed* state is kept per key group, so that
a rescaled job gives each new subtask exactly the key groups of its range
(``KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex``). *Operator* state belongs
to a subtask; on a rescale every new subtask is offered the parts of all old subtasks (Flink's
union redistribution) and the operator decides what to keep. Operators are matched by uid, so
state follows an operator through an upgrade that renames or re-chains it.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dataflow_engine.runtime.state.key_groups import key_group_range
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.runtime.time.valve import ValveState

_PROTOCOL = pickle.HIGHEST_PROTOCOL


@dataclass(frozen=True, slots=True)
class OperatorSnapshot:
    """One operator's state in one subtask."""

    #: Key group -> that group's state (plain picklable data).
    keyed: dict[int, Any] = field(default_factory=dict)
    #: The subtask's own, non-keyed state.
    operator: Any = None
    #: The operator's current watermark (restored between epochs; after a rescale the least
    #: of the old subtasks', so that nothing fires early).
    watermark: int = MIN_TIMESTAMP


@dataclass(frozen=True, slots=True)
class SubtaskSnapshot:
    """What one subtask hands to its successor: its operators' states by uid, and the
    watermarks of its input channels (kept between epochs, dropped on a rescale as Flink's
    input watermarks are never checkpointed)."""

    operators: dict[str, OperatorSnapshot]
    #: Per input (1 or 2): its StatusWatermarkValve's state (channel watermarks, idle
    #: channels, current watermark).
    inputs: dict[int, ValveState] = field(default_factory=dict)
    #: The subtask's input has ended (Flink's finished task): later epochs only hand on the
    #: final watermark and this state.
    ended: bool = False

    def to_bytes(self) -> bytes:
        return pickle.dumps(self, _PROTOCOL)

    @staticmethod
    def from_bytes(data: bytes) -> SubtaskSnapshot:
        snapshot = pickle.loads(data)
        assert isinstance(snapshot, SubtaskSnapshot)
        return snapshot


@dataclass(frozen=True, slots=True)
class RestoredState:
    """The state one new subtask starts from, for one operator."""

    #: The key groups of this subtask: keyed parts outside it must be ignored.
    key_groups: range
    #: Keyed parts of the old subtasks whose key groups overlap :attr:`key_groups`.
    keyed: tuple[dict[int, Any], ...]
    #: Operator state of every old subtask, by old subtask index.
    operator: tuple[Any, ...]
    #: This subtask's index, and whether the old run had the same parallelism (then
    #: ``operator[subtask_index]`` is this subtask's own state).
    subtask_index: int
    same_parallelism: bool
    watermark: int = MIN_TIMESTAMP

    @property
    def own(self) -> Any:
        """This subtask's own operator state (None after a rescale)."""
        return self.operator[self.subtask_index] if self.same_parallelism else None


@dataclass(frozen=True, slots=True)
class TaskRestore:
    """Everything one new subtask restores, by operator uid, and its input watermarks (only
    from the previous epoch of the same run: a restore from a checkpoint starts them again
    from the operator's watermark, as Flink's input watermarks are never checkpointed)."""

    operators: dict[str, RestoredState]
    inputs: dict[int, ValveState]
    ended: bool = False

    def to_bytes(self) -> bytes:
        return pickle.dumps(self, _PROTOCOL)

    @staticmethod
    def own(snapshot: SubtaskSnapshot, index: int, parallelism: int,
            max_parallelism: int) -> TaskRestore:
        """A subtask restoring its own snapshot (the next epoch of an unchanged plan)."""
        groups = key_group_range(max_parallelism, parallelism, index)
        operators = {}
        for uid, operator in snapshot.operators.items():
            others: list[Any] = [None] * parallelism
            others[index] = operator.operator
            operators[uid] = RestoredState(groups, (operator.keyed,), tuple(others), index,
                                           True, operator.watermark)
        return TaskRestore(operators, snapshot.inputs, snapshot.ended)


def redistribute(parts: Mapping[str, Sequence[OperatorSnapshot | None]], parallelism: int,
                 max_parallelism: int, ended: bool = False) -> list[TaskRestore]:
    """What each of ``parallelism`` new subtasks restores: ``parts`` gives, per operator uid,
    each old subtask's snapshot of that operator; ``ended``: their input had ended."""
    restores = []
    for index in range(parallelism):
        groups = key_group_range(max_parallelism, parallelism, index)
        operators = {}
        for uid, old in parts.items():
            same = len(old) == parallelism
            present = [part for part in old if part is not None]
            if not present:
                continue
            mine = old[index] if same else None
            watermark = (mine.watermark if mine is not None
                         else min(part.watermark for part in present))
            operators[uid] = RestoredState(
                groups, tuple(_overlapping(present, groups)),
                tuple(part.operator if part is not None else None for part in old),
                index, same, watermark)
        restores.append(TaskRestore(operators, {}, ended))
    return restores


def _overlapping(parts: Iterable[OperatorSnapshot], groups: range) -> Iterable[dict[int, Any]]:
    for operator in parts:
        part = {group: data for group, data in operator.keyed.items() if group in groups}
        if part:
            yield part
