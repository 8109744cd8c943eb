"""When the autoscaler decides, and when a decision applies (flink-kubernetes-operator's
metrics window, stabilization interval and scale-down interval).

Pure: on each evaluation the caller passes a metric sample, the job's health and the time,
keeps the returned AutoscalerMemory (it round-trips through a JSON-able dict, and stays
bounded) for the next one, and deploys the memory's overrides (advisory mode: records the
decision only).

The window's rates are its first and last samples' cumulative counters apart, each sample
taken as an epoch ended (so a window without a finished epoch is not a window of no load);
samples taken before the deployment stabilized are not used, and a sample whose counters went
down (the job restarted), or that lacks a vertex, starts a new window. While the job is not
healthy (not RUNNING, a subtask not running, checkpoints failing) its rates say nothing of its
capacity: the window is emptied. A decision that applies empties it too, as its rates
describe the old parallelism.

A scale-up applies at once, as lag grows meanwhile; a scale-down applies once it was
recommended at every decision for ``scale_down_delay``, so a dip in load does not cost two
restarts. A decision applies only what is due: another vertex's scale-down that is not stays
pending. Evaluations that cannot decide do not interrupt a pending scale-down; a decision that
recommends otherwise for its vertex, or a change of its running parallelism, cancels it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dataflow_engine.graph.states import JobStatus
from dataflow_operator.autoscaler.algorithm import (
    AutoscalerConfig,
    Recommendation,
    Topology,
    VertexMetrics,
    recommend,
)


@dataclass(frozen=True)
class VertexSample:
    """A vertex's cumulative counters, all subtasks together: records in and out, busy time
    (ms, summed over subtasks); for a source, the records that reached the external system
    (e.g. the sum of Kafka's log end offsets, None when unmeasured) and those waiting (lag)."""

    records_in: float
    records_out: float
    busy_ms: float
    arrived: float | None = None
    backlog: float | None = None

    def follows(self, earlier: VertexSample) -> bool:
        """No counter went down since ``earlier``."""
        arrived = (self.arrived is None or earlier.arrived is None
                   or self.arrived >= earlier.arrived)
        return (arrived and self.records_in >= earlier.records_in
                and self.records_out >= earlier.records_out and self.busy_ms >= earlier.busy_ms)


@dataclass(frozen=True)
class MetricSample:
    """Every vertex's counters at ``time`` (seconds)."""

    time: float
    vertices: Mapping[str, VertexSample]

    def follows(self, earlier: MetricSample) -> bool:
        """It continues ``earlier``'s counters: later, with the same vertices or fewer, and no
        counter reset."""
        return self.time > earlier.time and all(
            vid in earlier.vertices and v.follows(earlier.vertices[vid])
            for vid, v in self.vertices.items())


@dataclass(frozen=True)
class JobHealth:
    """The running deployment: its JobStatus, whether every subtask runs, the checkpoints
    failed since the last completed one, and when it started RUNNING (seconds)."""

    status: JobStatus
    all_subtasks_running: bool
    checkpoint_failures: int
    running_since: float

    def trouble(self) -> str | None:
        """Why its rates are no measure of its capacity now, or None."""
        if self.status is not JobStatus.RUNNING:
            return f"the job is {self.status.value}"
        if not self.all_subtasks_running:
            return "not every subtask is running"
        if self.checkpoint_failures > 0:
            return f"{self.checkpoint_failures} checkpoints failed in a row"
        return None


@dataclass(frozen=True)
class PendingScaleDown:
    """A scale-down recommended at every decision since ``since``, from ``parallelism``."""

    since: float
    parallelism: int


@dataclass(frozen=True)
class Decision:
    """At ``time``: the changes applied, and the scale-downs waiting for the delay."""

    time: float
    applied: tuple[Recommendation, ...]
    pending: tuple[Recommendation, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        return cls(data["time"], tuple(Recommendation(**r) for r in data["applied"]),
                   tuple(Recommendation(**r) for r in data["pending"]))


@dataclass(frozen=True)
class AutoscalerMemory:
    """What the autoscaler keeps between evaluations: the window's samples, the pending
    scale-downs by vertex id, the latest decisions (oldest first) and the parallelism it set
    per vertex id."""

    samples: tuple[MetricSample, ...] = ()
    pending: Mapping[str, PendingScaleDown] = field(default_factory=dict)
    decisions: tuple[Decision, ...] = ()
    overrides: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: numbers, strings, None, dicts and sequences."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AutoscalerMemory:
        return cls(
            samples=tuple(MetricSample(s["time"], {vid: VertexSample(**v)
                                                   for vid, v in s["vertices"].items()})
                          for s in data["samples"]),
            pending={vid: PendingScaleDown(**p) for vid, p in data["pending"].items()},
            decisions=tuple(Decision.from_dict(d) for d in data["decisions"]),
            overrides=dict(data["overrides"]))


@dataclass(frozen=True)
class Evaluation:
    """The memory to keep, the decision made (None: none was due), and why no decision could
    be made (None: one could)."""

    memory: AutoscalerMemory
    decision: Decision | None
    waiting: str | None


def evaluate(memory: AutoscalerMemory, sample: MetricSample, health: JobHealth,
             topology: Topology, config: AutoscalerConfig, now: float) -> Evaluation:
    """Add ``sample`` to the window and decide if the job is healthy, stabilized and the
    window full; a decision is returned when it applies a change or starts a scale-down's
    delay."""
    if (trouble := health.trouble()) is not None:
        return Evaluation(replace(memory, samples=()), None, trouble)
    stable = health.running_since + config.stabilization_interval
    samples = window(memory.samples, sample, topology, stable, config)
    memory = replace(memory, samples=samples)
    if now < stable:
        return Evaluation(memory, None, f"stabilizing for {stable - now:.0f} s more")
    span = samples[-1].time - samples[0].time if samples else 0.0
    if span < config.metrics_window:
        return Evaluation(memory, None, f"collecting metrics: {span:.0f} of "
                                        f"{config.metrics_window:.0f} s")
    recommendations = recommend(topology, window_metrics(samples, topology), config)
    return Evaluation(*_decide(memory, recommendations, config, now), None)


def window(samples: tuple[MetricSample, ...], sample: MetricSample, topology: Topology,
           stable: float, config: AutoscalerConfig) -> tuple[MetricSample, ...]:
    """The window with ``sample``: from the last sample at least ``metrics_window`` before it
    (so a full window spans that much), none before ``stable``, at most ``max_samples`` (the
    closest together thinned out: the rates need only the first and the last)."""
    kept = [s for s in samples if s.time >= stable]
    new = not kept or sample.time != kept[-1].time  # else no epoch ended since: nothing new
    if new and sample.time >= stable and all(v.vertex_id in sample.vertices
                                             for v in topology.vertices):
        kept = [*kept, sample] if kept and sample.follows(kept[-1]) else [sample]
    while len(kept) > 2 and kept[1].time <= kept[-1].time - config.metrics_window:
        del kept[0]
    while len(kept) > config.max_samples:
        del kept[min(range(1, len(kept) - 1), key=lambda i: kept[i + 1].time - kept[i - 1].time)]
    return tuple(kept)


def window_metrics(samples: tuple[MetricSample, ...],
                   topology: Topology) -> dict[str, VertexMetrics]:
    """Each vertex's rates over the window; a source's backlog is the latest."""
    first, last = samples[0], samples[-1]
    span = last.time - first.time
    metrics: dict[str, VertexMetrics] = {}
    for vertex in topology.vertices:
        a, b = first.vertices[vertex.vertex_id], last.vertices[vertex.vertex_id]
        busy = (b.busy_ms - a.busy_ms) / 1000 / span / vertex.parallelism
        arrival = (None if a.arrived is None or b.arrived is None
                   else (b.arrived - a.arrived) / span)
        metrics[vertex.vertex_id] = VertexMetrics(
            (b.records_in - a.records_in) / span, (b.records_out - a.records_out) / span,
            min(busy, 1.0), arrival, b.backlog or 0.0)
    return metrics


def _decide(memory: AutoscalerMemory, recommendations: tuple[Recommendation, ...],
            config: AutoscalerConfig, now: float) -> tuple[AutoscalerMemory, Decision | None]:
    applied: list[Recommendation] = []
    waiting: list[Recommendation] = []
    pending: dict[str, PendingScaleDown] = {}
    started = False
    for rec in recommendations:
        if rec.new_parallelism > rec.parallelism:
            applied.append(rec)
        elif rec.new_parallelism < rec.parallelism:
            since = memory.pending.get(rec.vertex_id)
            if since is None or since.parallelism != rec.parallelism:
                since, started = PendingScaleDown(now, rec.parallelism), True
            if now - since.since >= config.scale_down_delay:
                applied.append(rec)
            else:
                pending[rec.vertex_id] = since
                waiting.append(rec)
    memory = replace(memory, pending=pending)
    if not applied and not started:
        return memory, None
    decision = Decision(now, tuple(applied), tuple(waiting))
    memory = replace(memory, decisions=(*memory.decisions, decision)[-config.max_decisions:])
    if applied:
        memory = replace(memory, samples=(), overrides={
            **memory.overrides, **{rec.vertex_id: rec.new_parallelism for rec in applied}})
    return memory, decision
