"""Flink's ExecutionState and JobStatus, with the transitions each allows."""

from __future__ import annotations

from enum import StrEnum


class IllegalStateTransition(ValueError):
    pass


class ExecutionState(StrEnum):
    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"
    RECONCILING = "RECONCILING"

    @property
    def is_terminal(self) -> bool:
        return self in (ExecutionState.FINISHED, ExecutionState.CANCELED, ExecutionState.FAILED)


_E = ExecutionState
_EXECUTION_TRANSITIONS: dict[ExecutionState, frozenset[ExecutionState]] = {
    _E.CREATED: frozenset({_E.SCHEDULED, _E.CANCELED, _E.FAILED}),
    _E.SCHEDULED: frozenset({_E.DEPLOYING, _E.CANCELING, _E.CANCELED, _E.FAILED}),
    # A short task may finish before its INITIALIZING or RUNNING report is seen.
    _E.DEPLOYING: frozenset({_E.INITIALIZING, _E.RUNNING, _E.FINISHED, _E.CANCELING, _E.FAILED}),
    _E.INITIALIZING: frozenset({_E.RUNNING, _E.FINISHED, _E.CANCELING, _E.FAILED}),
    _E.RUNNING: frozenset({_E.FINISHED, _E.CANCELING, _E.FAILED}),
    _E.CANCELING: frozenset({_E.CANCELED, _E.FAILED}),
    _E.RECONCILING: frozenset({_E.RUNNING, _E.FINISHED, _E.CANCELING, _E.CANCELED, _E.FAILED}),
    _E.FINISHED: frozenset(),
    _E.CANCELED: frozenset(),
    _E.FAILED: frozenset(),
}


def check_execution_transition(current: ExecutionState, target: ExecutionState) -> None:
    if target is not current and target not in _EXECUTION_TRANSITIONS[current]:
        raise IllegalStateTransition(f"ExecutionState {current} cannot become {target}")


class JobStatus(StrEnum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    def is_globally_terminal_state(self) -> bool:
        """PyFlink's name of :attr:`is_globally_terminal`."""
        return self.is_globally_terminal

    def is_terminal_state(self) -> bool:
        """Globally terminal, or SUSPENDED (this run of it ended)."""
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED

    @property
    def is_globally_terminal(self) -> bool:
        """FINISHED, FAILED or CANCELED: the job will never run again."""
        return self in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED)


_J = JobStatus
_JOB_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    _J.CREATED: frozenset({_J.RUNNING, _J.FAILING, _J.FAILED, _J.CANCELLING, _J.CANCELED,
                           _J.SUSPENDED, _J.RECONCILING}),
    _J.RUNNING: frozenset({_J.FINISHED, _J.FAILING, _J.FAILED, _J.CANCELLING, _J.RESTARTING,
                           _J.SUSPENDED}),
    _J.FAILING: frozenset({_J.FAILED, _J.RESTARTING, _J.CANCELLING, _J.SUSPENDED}),
    _J.RESTARTING: frozenset({_J.CREATED, _J.RUNNING, _J.FAILED, _J.CANCELLING, _J.SUSPENDED}),
    _J.CANCELLING: frozenset({_J.CANCELED, _J.FAILED}),
    _J.RECONCILING: frozenset({_J.CREATED, _J.RUNNING, _J.FINISHED, _J.FAILING, _J.FAILED,
                               _J.CANCELLING, _J.CANCELED, _J.SUSPENDED}),
    # Suspended jobs are not globally terminal: they resume as a new attempt.
    _J.SUSPENDED: frozenset({_J.CREATED, _J.RECONCILING}),
    _J.FINISHED: frozenset(),
    _J.FAILED: frozenset(),
    _J.CANCELED: frozenset(),
}


def check_job_transition(current: JobStatus, target: JobStatus) -> None:
    if target is not current and target not in _JOB_TRANSITIONS[current]:
        raise IllegalStateTransition(f"JobStatus {current} cannot become {target}")
