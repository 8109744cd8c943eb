"""The autoscaler's memory kept in the job's status (``status.autoscaler``), so that an
operator restart loses neither its window nor its decisions; bounded by the policy's sample
and decision counts."""

from __future__ import annotations

from dataflow_operator.autoscaler.algorithm import Recommendation
from dataflow_operator.autoscaler.policy import (
    AutoscalerMemory,
    Decision,
    MetricSample,
    PendingScaleDown,
    VertexSample,
)
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.model import (
    AutoscalerStatus,
    MetricSampleStatus,
    ScaledVertexStatus,
    ScalingDecisionStatus,
)

#: Changes (and pending scale-downs) of a decision the status lists; the overrides hold them
#: all, so a decision of a job of many vertices stays small.
DECISION_DETAIL = 50


def memory_of(status: AutoscalerStatus | None) -> AutoscalerMemory:
    if status is None:
        return AutoscalerMemory()
    return AutoscalerMemory(
        samples=tuple(MetricSample(s.time, {
            vertex: VertexSample(v[0] or 0.0, v[1] or 0.0, v[2] or 0.0, v[3], v[4])
            for vertex, v in s.vertices.items()}) for s in status.samples),
        pending={vertex: PendingScaleDown(since, status.pending_from.get(vertex, 0))
                 for vertex, since in status.pending_since.items()},
        decisions=tuple(Decision(cond.parse_time(d.time).timestamp(),
                                 tuple(map(_recommendation, d.applied)),
                                 tuple(map(_recommendation, d.pending)))
                        for d in status.decisions),
        overrides=dict(status.overrides))


def status_of(memory: AutoscalerMemory, previous: AutoscalerStatus | None,
              waiting: str | None, advisory: bool) -> AutoscalerStatus:
    """The status of ``memory``: a decision the previous status did not have was made now,
    in the current mode. In advisory mode nothing is overridden."""
    flags = {d.time: d.advisory for d in previous.decisions} if previous else {}
    decisions = []
    for decision in memory.decisions:
        time = cond.from_millis(decision.time * 1000)
        omitted = sum(max(0, len(changes) - DECISION_DETAIL)
                      for changes in (decision.applied, decision.pending))
        decisions.append(ScalingDecisionStatus(
            time=time, applied=[_vertex(r) for r in decision.applied[:DECISION_DETAIL]],
            pending=[_vertex(r) for r in decision.pending[:DECISION_DETAIL]],
            advisory=flags.get(time, advisory), omitted=omitted))
    return AutoscalerStatus(
        overrides={} if advisory else dict(memory.overrides), waiting=waiting,
        decisions=decisions,
        samples=[MetricSampleStatus(time=s.time, vertices={
            vertex: [v.records_in, v.records_out, v.busy_ms, v.arrived, v.backlog]
            for vertex, v in s.vertices.items()}) for s in memory.samples],
        pending_since={vertex: p.since for vertex, p in memory.pending.items()},
        pending_from={vertex: p.parallelism for vertex, p in memory.pending.items()})


def _vertex(r: Recommendation) -> ScaledVertexStatus:
    return ScaledVertexStatus(
        vertex=r.vertex_id, parallelism=r.parallelism, new_parallelism=r.new_parallelism,
        target_rate=round(r.target_rate, 3),
        true_rate=None if r.true_rate is None else round(r.true_rate, 3),
        busy_ratio=round(r.busy_ratio, 4), backlog=r.backlog, reason=r.reason)


def _recommendation(v: ScaledVertexStatus) -> Recommendation:
    return Recommendation(v.vertex, v.parallelism, v.new_parallelism, v.target_rate,
                          v.true_rate, v.busy_ratio, v.backlog, v.reason)
