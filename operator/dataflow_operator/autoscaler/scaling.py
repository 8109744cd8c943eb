"""The autoscaler in the operator's loops: an evaluation per sample of a running job's
driver, and the job it deploys.

Its decisions are parallelism overrides by JobVertex id (``status.autoscaler.overrides``). The
DataflowJob's spec stays as the user wrote it: the job runs that spec with the overrides as its
``parallelismOverrides`` (:func:`scaled_spec`), and a difference between the two is a rescale
due (:func:`rescale_due`), carried out as any spec change is (a savepoint upgrade), so an
operator restart or a failed attempt only delays it.
"""

from __future__ import annotations

from dataclasses import dataclass

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.rest import DriverStatusDocument
from dataflow_engine.spec.model import DataflowJobSpec, duration_seconds
from dataflow_operator.autoscaler import inputs, policy
from dataflow_operator.autoscaler.state import memory_of, status_of
from dataflow_operator.reconciler import rollback
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, WARNING, Event
from dataflow_operator.status.model import DataflowJobStatus


@dataclass(frozen=True)
class Scaled:
    status: DataflowJobStatus
    events: list[Event]


def sample_period(spec: DataflowJobSpec, compiled: CompiledJob) -> float:
    """Seconds between two samples: a window holds about as many as the status keeps."""
    return duration_seconds(spec.job.autoscaler.metrics_window) / inputs.kept(
        inputs.STATUS_SAMPLES, 2, len(compiled.job_graph.vertices))


def autoscale(spec: DataflowJobSpec, compiled: CompiledJob, status: DataflowJobStatus,
              runner: DriverStatusDocument, now: float) -> Scaled | None:
    """One evaluation with a new sample of the running job; None when the status would not
    change. A job whose autoscaler was turned off keeps its decisions and loses its
    overrides."""
    autoscaler = spec.job.autoscaler
    previous = status.autoscaler
    if not autoscaler.enabled:
        if previous is None or not previous.overrides:
            return None
        return Scaled(status.model_copy(update={"autoscaler": previous.model_copy(
            update={"overrides": {}, "waiting": "disabled"})}), [])
    if (generation := status.observed_generation) is not None and rollback.rolled_back_before(
            status, generation):
        waiting = f"generation {generation} was rolled back: scaling resumes with a spec change"
        if previous is None or previous.waiting == waiting:
            return None
        return Scaled(status.model_copy(update={"autoscaler": previous.model_copy(
            update={"waiting": waiting, "samples": []})}), [])
    evaluation = policy.evaluate(
        memory_of(previous), inputs.sample(compiled, runner, now),
        inputs.health(status, runner, now), inputs.topology(compiled, runner),
        inputs.config(autoscaler, compiled), now)
    status = status.model_copy(update={"autoscaler": status_of(
        evaluation.memory, previous, evaluation.waiting, autoscaler.advisory)})
    decision = evaluation.decision
    if autoscaler.advisory and decision is not None and decision.applied:
        return Scaled(status, [Event(NORMAL, "ScalingRecommended", _changes(status, compiled))])
    return Scaled(status, [])  # a decision to apply is said once deployed (applied())


def applied(status: DataflowJobStatus, compiled: CompiledJob) -> Event:
    """The Event of the latest decision, now deployed."""
    return Event(NORMAL, "ScalingApplied", _changes(status, compiled))


def refused(status: DataflowJobStatus, running: DataflowJobSpec) -> tuple[DataflowJobStatus,
                                                                          Event]:
    """The rescale was reconciled and not deployed (the upgrade was refused, or the
    generation was rolled back): the autoscaler gives it up."""
    why = next((c.message for c in status.conditions
                if (c.type == cond.UPGRADED and c.status == "False")
                or (c.type == cond.ROLLED_BACK and c.status == "True")),
               "the job runs another spec")
    return given_up(status, running, f"the rescale was not deployed: {why}")


def given_up(status: DataflowJobStatus, running: DataflowJobSpec | None,
             why: str) -> tuple[DataflowJobStatus, Event]:
    """The autoscaler's overrides back to what the running deployment has, and why; it
    decides again from a new window."""
    autoscaler = status.autoscaler
    assert autoscaler is not None
    deployed = running.parallelism_overrides if running is not None else {}
    overrides = {vertex: deployed[vertex] for vertex in autoscaler.overrides
                 if vertex in deployed}
    return status.model_copy(update={"autoscaler": autoscaler.model_copy(update={
        "overrides": overrides, "waiting": why, "samples": []})}), Event(
        WARNING, "ScalingFailed", why)


def _changes(status: DataflowJobStatus, compiled: CompiledJob) -> str:
    """The latest decision's changes, by vertex name."""
    assert status.autoscaler is not None and status.autoscaler.decisions
    names = {v.id: v.name for v in compiled.job_graph.vertices}
    return "; ".join(f"{names.get(v.vertex, v.vertex)}: {v.parallelism} -> "
                     f"{v.new_parallelism} ({v.reason})"
                     for v in status.autoscaler.decisions[-1].applied)


def applicable(spec: DataflowJobSpec, status: DataflowJobStatus,
               compiled: CompiledJob) -> dict[str, int]:
    """The autoscaler's overrides of vertices the job still has, within their key groups and
    the autoscaler's bounds as the spec now gives them (a spec change may have replaced a
    vertex, lowered its maxParallelism or narrowed its bounds)."""
    if status.autoscaler is None:
        return {}
    config = inputs.config(spec.job.autoscaler, compiled)
    limit = {v.id: v.max_parallelism for v in compiled.job_graph.vertices}
    kept = {}
    for vertex, parallelism in status.autoscaler.overrides.items():
        if vertex in limit:
            low, high = config.bounds(vertex)
            kept[vertex] = min(max(parallelism, low), high, limit[vertex])
    return kept


def scaled_spec(spec: DataflowJobSpec, compiled: CompiledJob,
                status: DataflowJobStatus) -> DataflowJobSpec:
    """The spec the job runs: the user's, with the autoscaler's overrides (which win over
    the spec's own) unless it is off or advisory; ``compiled`` is the user's spec's."""
    autoscaler = spec.job.autoscaler
    if not autoscaler.enabled or autoscaler.advisory:
        return spec
    overrides = applicable(spec, status, compiled)
    if not overrides:
        return spec
    return spec.model_copy(update={"parallelism_overrides": {
        **spec.parallelism_overrides, **overrides}})


def rescale_due(spec: DataflowJobSpec, compiled: CompiledJob,
                status: DataflowJobStatus) -> bool:
    """The running spec lacks an override the autoscaler decided."""
    autoscaler = spec.job.autoscaler
    return (autoscaler.enabled and not autoscaler.advisory and any(
        spec.parallelism_overrides.get(vertex) != p
        for vertex, p in applicable(spec, status, compiled).items()))

