"""ExecutionVertex states derived from Spark's own task states, never synthesized.

Polls the driver's AppStatusStore (what Spark's UI and REST API serve, present even with the UI
disabled) for the stages of this run's job group. A stage's tasks are mapped back to subtasks
through the stage's root RDD (see :class:`~.spark_job.SparkJob`): partition ``k`` of the root is
one (vertex, subtask). A subtask's state is its latest Spark task attempt's:

==================  ==============
Spark task status   ExecutionState
==================  ==============
(stage pending)     CREATED
(stage active)      SCHEDULED
RUNNING, GET RESULT RUNNING
SUCCESS             FINISHED
FAILED              FAILED
KILLED              CANCELED
==================  ==============
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pyspark import SparkContext

from dataflow_engine.graph.states import ExecutionState
from dataflow_engine.runtime.spark.spark_job import Segment

_TASK_STATES = {
    "RUNNING": ExecutionState.RUNNING,
    "GET RESULT": ExecutionState.RUNNING,
    "SUCCESS": ExecutionState.FINISHED,
    "FAILED": ExecutionState.FAILED,
    "KILLED": ExecutionState.CANCELED,
}
_MAX_TASKS = 1 << 20


@dataclass(frozen=True, slots=True)
class TaskObservation:
    state: ExecutionState
    attempt: int
    stage_id: int
    task_id: int


class TaskStates(Protocol):
    """Where a run's status reads each subtask's ExecutionState."""

    #: A continuous job's subtasks are Spark tasks of one epoch at a time (between two, a
    #: subtask shows its last task's state, though it runs on).
    per_epoch: bool

    def poll(self) -> None: ...

    def state_of(self, key: tuple[str, int]) -> tuple[ExecutionState, int]: ...


class SparkTaskStates:
    """Latest observation per ``(vertex_id, subtask_index)`` for one job group."""

    per_epoch = True

    def __init__(self, sc: SparkContext, job_group: str, roots: dict[int, list[Segment]]) -> None:
        self.sc = sc
        self.job_group = job_group
        self.roots = roots
        self._stage_layout: dict[int, list[tuple[str, int] | None] | None] = {}
        self._final_stages: set[int] = set()
        self.observed: dict[tuple[str, int], TaskObservation] = {}
        self.scheduled: set[tuple[str, int]] = set()

    def _layout(self, stage: Any) -> list[tuple[str, int] | None] | None:
        """Partition index -> (vertex, subtask) for a stage, from its root RDD."""
        rdd_ids = stage.rddIds()
        present = [rdd_ids.apply(i) for i in range(rdd_ids.size())]
        roots = self.roots  # once: a continuous job replaces it every epoch
        registered = [rid for rid in present if rid in roots]
        if not registered:
            return None
        layout: list[tuple[str, int] | None] = []
        for segment in roots[max(registered)]:
            if segment.vertex_id is None:
                layout.extend([None] * segment.count)
            else:
                layout.extend((segment.vertex_id, i) for i in range(segment.count))
        return layout

    def poll(self) -> None:
        tracker = self.sc.statusTracker()
        store = self.sc._jsc.sc().statusStore()
        stage_ids: set[int] = set()
        for job_id in tracker.getJobIdsForGroup(self.job_group):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                stage_ids.update(int(s) for s in info.stageIds)
        # Spark forgets old jobs (spark.ui.retainedJobs): so do we, or a continuous job's
        # epochs would grow these without bound.
        self._final_stages &= stage_ids
        for forgotten in self._stage_layout.keys() - stage_ids:
            del self._stage_layout[forgotten]
        for stage_id in sorted(stage_ids - self._final_stages):
            self._poll_stage(store, stage_id)

    def _poll_stage(self, store: Any, stage_id: int) -> None:
        try:
            stage = store.lastStageAttempt(stage_id)
        except Exception:  # not in the store yet
            return
        if stage_id not in self._stage_layout:
            self._stage_layout[stage_id] = self._layout(stage)
        layout = self._stage_layout[stage_id]
        if layout is None:
            self._final_stages.add(stage_id)
            return
        status = stage.status().toString()
        seen: set[int] = set()
        all_final = True
        for attempt in range(stage.attemptId() + 1):
            tasks = store.taskList(stage_id, attempt, _MAX_TASKS)
            for k in range(tasks.size()):
                task = tasks.apply(k)
                index = task.index()
                if index >= len(layout) or layout[index] is None:
                    continue
                key = layout[index]
                assert key is not None
                state = _TASK_STATES.get(task.status(), ExecutionState.SCHEDULED)
                observation = TaskObservation(state, task.attempt(), stage_id, task.taskId())
                previous = self.observed.get(key)
                if previous is None or (previous.stage_id, previous.task_id) <= (
                        stage_id, observation.task_id):
                    self.observed[key] = observation
                seen.add(index)
                all_final = all_final and state.is_terminal
        if status == "ACTIVE":
            for index, key in enumerate(layout):
                if key is not None and index not in seen:
                    self.scheduled.add(key)
        if status in ("COMPLETE", "FAILED", "SKIPPED") and all_final:
            self._final_stages.add(stage_id)

    def state_of(self, key: tuple[str, int]) -> tuple[ExecutionState, int]:
        observation = self.observed.get(key)
        if observation is not None:
            return observation.state, observation.attempt
        if key in self.scheduled:
            return ExecutionState.SCHEDULED, 0
        return ExecutionState.CREATED, 0
