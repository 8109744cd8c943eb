"""A byte budget for the DataflowJob status, whatever plan the operator accepted.

An object's whole request must stay under etcd's limit (1.5 MiB by default) with the spec
(at most ``--max-spec-bytes``), metadata and managedFields beside the status. Per-subtask
detail is what grows with the plan, so it is what gives way: first attempts and per-subtask
record counts, then the per-subtask states; within the default bounds on a job's size that
suffices and the vertex totals are kept. Beyond them (an admin raised ``--max-operators``),
the vertices and the plan's JobVertices go too. ``status.subtaskDetail`` says what is left.
"""

from __future__ import annotations

import json

from dataflow_operator.status import conditions as cond
from dataflow_operator.status.model import DataflowJobStatus, SubtaskDetail, VertexStatus

#: The most bytes the status takes as JSON: with a spec of --max-spec-bytes (128 KiB by
#: default) the object stays well under etcd's 1.5 MiB.
STATUS_BUDGET_BYTES = 512 * 1024


def status_bytes(status: DataflowJobStatus) -> int:
    return len(json.dumps(status.model_dump(mode="json", by_alias=True),
                          separators=(",", ":")))


def within_budget(status: DataflowJobStatus,
                  budget: int = STATUS_BUDGET_BYTES) -> DataflowJobStatus:
    """``status``, with per-subtask detail left out as far as it must be to fit ``budget``."""
    if status.error is not None:
        status = status.model_copy(update={"error": cond.bounded(status.error)})
    levels = list(SubtaskDetail)
    # A status read back after a restart may already be summarised: never claim more detail.
    first = max((levels.index(_detail_of(vertex)) for vertex in status.vertices), default=0)
    if status.subtask_detail is SubtaskDetail.NONE and not status.vertices:
        first = levels.index(SubtaskDetail.NONE)
    for detail in levels[first:]:
        fitted = _with_detail(status, detail)
        if status_bytes(fitted) <= budget:
            break
    return fitted


def _detail_of(vertex: VertexStatus) -> SubtaskDetail:
    if vertex.parallelism and not vertex.subtasks:
        return SubtaskDetail.COUNTS
    if vertex.parallelism and not vertex.attempts:
        return SubtaskDetail.STATES
    return SubtaskDetail.FULL


def _with_detail(status: DataflowJobStatus, detail: SubtaskDetail) -> DataflowJobStatus:
    if detail is SubtaskDetail.NONE:
        plan = status.plan.model_copy(update={"job_vertices": []}) if status.plan else None
        return status.model_copy(update={"subtask_detail": detail, "vertices": [],
                                         "plan": plan})
    left_out: dict[str, str] = {}
    if detail is not SubtaskDetail.FULL:
        left_out = {"attempts": "", "subtask_records_in": "", "subtask_records_out": ""}
    if detail is SubtaskDetail.COUNTS:
        left_out["subtasks"] = ""
    return status.model_copy(update={
        "subtask_detail": detail,
        "vertices": [vertex.model_copy(update=left_out) for vertex in status.vertices]})
