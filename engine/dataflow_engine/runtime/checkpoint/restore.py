"""Maps a completed checkpoint onto the plan of the job that restores from it.

Every vertex gets its operators' states gathered by uid from wherever they were (the plan may
have been rescaled or chained differently) and redistributed by key group; an unchanged
subtask gets exactly its own state back. Input watermarks are not restored: channel numbers
mean other producers once an upstream vertex is rescaled. State of an operator the new plan
lacks is refused, unless the job allows non-restored state, as Flink's
``--allowNonRestoredState`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dataflow_engine.runtime.checkpoint.snapshots import (
    OperatorSnapshot,
    SubtaskSnapshot,
    redistribute,
)
from dataflow_engine.runtime.checkpoint.storage import CompletedCheckpoint, VertexState


class StateMismatchError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class VertexShape:
    """What restoring needs to know about a JobVertex of the new plan."""

    vertex_id: str
    parallelism: int
    max_parallelism: int
    operator_uids: tuple[str, ...]


def plan_restores(checkpoint: CompletedCheckpoint, shapes: Sequence[VertexShape],
                  allow_non_restored_state: bool = False) -> dict[str, tuple[bytes, ...]]:
    """Per new vertex, each subtask's pickled SubtaskSnapshot or TaskRestore."""
    new_uids = {uid for shape in shapes for uid in shape.operator_uids}
    old = checkpoint.vertices
    _check_max_parallelism(old, shapes)
    parts, ended_uids = _operator_parts(old)
    dropped = sorted(uid for uid, snapshots in parts.items()
                     if uid not in new_uids and any(_has_state(s) for s in snapshots))
    if dropped and not allow_non_restored_state:
        raise StateMismatchError(
            f"the checkpoint {checkpoint.path or checkpoint.checkpoint_id} has state of "
            f"operator(s) {', '.join(repr(uid) for uid in dropped)} that the job no longer "
            "has: keep their uids, or allow non-restored state")
    restores: dict[str, tuple[bytes, ...]] = {}
    for shape in shapes:
        mine = {uid: parts[uid] for uid in shape.operator_uids if uid in parts}
        ended = bool(mine) and set(mine) <= ended_uids
        restores[shape.vertex_id] = tuple(
            restore.to_bytes() for restore in redistribute(
                mine, shape.parallelism, shape.max_parallelism, ended))
    return restores


def _check_max_parallelism(old: Mapping[str, VertexState], shapes: Sequence[VertexShape]) -> None:
    """Key groups are fixed for the life of keyed state, as in Flink."""
    before = {uid: v.max_parallelism for v in old.values() for uid in v.operator_uids}
    for shape in shapes:
        for uid in shape.operator_uids:
            if uid in before and before[uid] != shape.max_parallelism:
                raise StateMismatchError(
                    f"operator {uid!r} has maxParallelism {shape.max_parallelism}, but its "
                    f"state was written with {before[uid]}: maxParallelism cannot change "
                    "while state is restored")


def _operator_parts(vertices: Mapping[str, VertexState]
                    ) -> tuple[dict[str, list[OperatorSnapshot | None]], set[str]]:
    """Each operator's snapshot per old subtask, and the operators whose input had ended."""
    parts: dict[str, list[OperatorSnapshot | None]] = {}
    ended: set[str] = set()
    for vertex in vertices.values():
        snapshots = [SubtaskSnapshot.from_bytes(data) for data in vertex.subtasks]
        for uid in vertex.operator_uids:
            parts[uid] = [snapshot.operators.get(uid) for snapshot in snapshots]
            if snapshots and all(snapshot.ended for snapshot in snapshots):
                ended.add(uid)
    return parts, ended


def _has_state(snapshot: OperatorSnapshot | None) -> bool:
    return snapshot is not None and (bool(snapshot.keyed) or snapshot.operator is not None)
