"""The restart strategy: a failed driver starts again after the strategy's delay while
attempts are left, or the job fails for good (Flink's fixed-delay and no-restart strategies).
"""

from __future__ import annotations

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.spec.model import DataflowJobSpec, RestartStrategyType, duration_seconds
from dataflow_operator.observer.job_status import Observed
from dataflow_operator.reconciler.actions import Provision, Reconciled, ScheduleRestart, StopDriver
from dataflow_operator.status.events import NORMAL, WARNING, Event
from dataflow_operator.status.job_status import with_job_status
from dataflow_operator.status.model import DataflowJobStatus


def after_observation(observed: Observed, spec: DataflowJobSpec,
                      generation: int) -> Reconciled:
    """What a look at the driver leads to: the observed status, or, when the driver failed,
    the strategy's answer (after the Events of what was observed)."""
    if observed.failure is None:
        return Reconciled(observed.status, observed.events)
    decision = on_failure(observed.status, spec, observed.failure, generation)
    decision.events[:0] = observed.events
    return decision


def on_failure(status: DataflowJobStatus, spec: DataflowJobSpec, message: str,
               generation: int) -> Reconciled:
    """A FAILING job (the driver failed with ``message``): RESTARTING with the driver stopped
    and a restart scheduled, or FAILED once the strategy allows no more restarts."""
    strategy = spec.restart_strategy
    if strategy.type is RestartStrategyType.FIXED_DELAY and status.restarts < strategy.attempts:
        attempt = status.restarts + 1
        status, events = with_job_status(status, JobStatus.RESTARTING, generation)
        status = status.model_copy(update={"restarts": attempt, "error": message})
        return Reconciled(status, [*events, Event(
            WARNING, "Restarting",
            f"driver failed: {message}; restart {attempt} of {strategy.attempts} in "
            f"{strategy.delay}")],
            actions=[StopDriver(), ScheduleRestart(duration_seconds(strategy.delay))])
    reason = ("no restart strategy" if strategy.type is RestartStrategyType.NONE
              else f"{strategy.attempts} restarts used")
    full = f"driver failed: {message} ({reason})"
    status, events = with_job_status(status, JobStatus.FAILED, generation, full)
    status = status.model_copy(update={"error": full})
    return Reconciled(status, [*events, Event(WARNING, "Failed", full)])


def restart(status: DataflowJobStatus, generation: int) -> Reconciled:
    """The delay passed: the same deployment starts again (from its own newest checkpoint, or
    where it began if it took none)."""
    restarted, events = with_job_status(status, JobStatus.CREATED, generation)
    return Reconciled(restarted, [*events, Event(
        NORMAL, "Submitted", f"driver restarted (restart {status.restarts})")],
        actions=[Provision(status.restarts, status.deployment)])
