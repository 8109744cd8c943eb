"""A human view of a DataflowJob's status: the per-vertex table ``dataflow status`` prints."""

from __future__ import annotations

from typing import Any

from dataflow_operator.status.model import CheckpointingStatus, DataflowJobStatus, SubtaskDetail
from dataflow_operator.status.subtask_encoding import decode_runs, decode_states


def render_status(job: dict[str, Any]) -> str:
    status = DataflowJobStatus.model_validate(job.get("status") or {})
    name = job["metadata"]["name"]
    lines = [f"DataflowJob {job['metadata'].get('namespace', '')}/{name}: "
             f"{status.job_status.value if status.job_status else 'PENDING'}"
             f"  subtasks running/total {status.subtasks or '-'}  restarts {status.restarts}"]
    for condition in status.conditions:
        lines.append(f"  {condition.type:<12} {condition.status:<6} {condition.reason}"
                     + (f": {condition.message}" if condition.message else ""))
    if status.error:
        lines.append(f"  error: {status.error}")
    if status.driver and status.driver.logs:
        lines.append(f"  driver log: {status.driver.logs}")
    if status.driver and status.driver.spark_ui_forward:
        lines.append(f"  Spark UI:   {status.driver.spark_ui_forward}, then "
                     "http://localhost:4040")
    if status.checkpoints is not None:
        lines.append(_checkpoints_line(status.checkpoints))
    if status.subtask_detail is not SubtaskDetail.FULL:
        lines.append(f"  per-subtask detail: {status.subtask_detail.value} only (the status "
                     "keeps within its byte budget)")
    header = f"  {'JOB VERTEX':<58} {'PAR':>4} {'RECORDS IN':>11} {'RECORDS OUT':>11}  STATES"
    lines.append(header)
    # Chains are named by Flink's operator names ("Map -> Map"); the job's own names tell them
    # apart.
    operators = {v.id: v.operators for v in status.plan.job_vertices} if status.plan else {}
    for vertex in status.vertices:
        states = ", ".join(f"{k} {v}" for k, v in vertex.states.items())
        lines.append(f"  {vertex.name[:58]:<58} {vertex.parallelism:>4} {vertex.records_in:>11} "
                     f"{vertex.records_out:>11}  {states}")
        if vertex.id in operators:
            lines.append(f"      operators: {', '.join(operators[vertex.id])}")
        subtasks = decode_states(vertex.subtasks)
        attempts = decode_runs(vertex.attempts)
        records_out = decode_runs(vertex.subtask_records_out, base36=True)
        for index, state in enumerate(subtasks[:8]):
            attempt = attempts[index] if index < len(attempts) else 0
            out = records_out[index] if index < len(records_out) else 0
            lines.append(f"      subtask {index + 1}/{vertex.parallelism}: {state.value:<12} "
                         f"attempt {attempt}, records out {out}")
        if len(subtasks) > 8:
            lines.append(f"      ... and {len(subtasks) - 8} more subtasks")
    return "\n".join(lines)


def _checkpoints_line(checkpoints: CheckpointingStatus) -> str:
    line = (f"  checkpoints: {checkpoints.completed} completed, {checkpoints.failed} failed, "
            f"{checkpoints.epochs} epochs")
    last = checkpoints.last_completed
    if last is not None:
        line += (f"; last {last.id} at {last.time} ({last.state_size or 0} bytes, "
                 f"{last.path or 'in memory'})")
    if checkpoints.restored_from:
        line += f"; restored from {checkpoints.restored_from}"
    if checkpoints.kafka_lag is not None:
        line += f"; kafka lag {checkpoints.kafka_lag} records"
    return line
