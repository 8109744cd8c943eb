"""The parallelism each JobVertex needs, after DS2 (Kalavri et al., OSDI 2018) as
flink-kubernetes-operator's autoscaler applies it.

A vertex's true processing rate is what a subtask processes per second of busy time: the rate
it would reach if it were never idle nor backpressured. The sources' target rate is what
arrives at the external system plus the backlog caught up within ``catch_up_duration``; it
flows down the DAG through each vertex's output ratio, so every vertex is sized for the load
that will reach it once its upstream vertices keep up, in one decision rather than one
bottleneck at a time.

A vertex with no busy time measured has no known capacity: it keeps its parallelism while
records are to reach it, and is sized as an idle vertex (to its lower bound) when none are.
A vertex that received nothing passes its input on unchanged (output ratio 1): downstream
vertices are then sized for at most the load they would get, never starved of capacity.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from graphlib import TopologicalSorter

#: A busy ratio below this (1 ms per second) measures no work: the capacity is unknown.
MIN_BUSY_RATIO = 0.001
#: Flink's highest max parallelism (key groups): no vertex needs more subtasks.
UPPER_BOUND_MAX_PARALLELISM = 32768


@dataclass(frozen=True)
class AutoscalerConfig:
    """The autoscaler's options, with the defaults of Flink's ``job.autoscaler.*``; durations
    in seconds. ``max_scale_up_factor`` 2.0 allows three times the parallelism in one decision
    (Flink's meaning); ``max_scale_down_factor`` 0.6 allows down to 40 % of it."""

    target_utilization: float = 0.7
    utilization_boundary: float = 0.3
    catch_up_duration: float = 300.0
    min_parallelism: int = 1
    max_parallelism: int = 200
    #: Per-vertex (min, max) parallelism, by vertex id, instead of the two above.
    vertex_bounds: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    max_scale_up_factor: float = 100000.0
    max_scale_down_factor: float = 0.6
    metrics_window: float = 900.0
    stabilization_interval: float = 300.0
    scale_down_delay: float = 3600.0
    #: The metric samples kept in the window, and the past decisions kept (the memory's bound).
    max_samples: int = 60
    max_decisions: int = 10

    def __post_init__(self) -> None:
        bounds = [(self.min_parallelism, self.max_parallelism), *self.vertex_bounds.values()]
        if not (0 < self.target_utilization <= 1 and self.utilization_boundary >= 0
                and self.catch_up_duration > 0 and self.max_scale_up_factor >= 0
                and 0 <= self.max_scale_down_factor < 1 and self.metrics_window > 0
                and self.stabilization_interval >= 0 and self.scale_down_delay >= 0
                and self.max_samples >= 2 and self.max_decisions >= 1
                and all(1 <= low <= high for low, high in bounds)):
            raise ValueError(f"invalid autoscaler options: {self}")

    def bounds(self, vertex_id: str) -> tuple[int, int]:
        """The (min, max) parallelism of a vertex."""
        return self.vertex_bounds.get(vertex_id, (self.min_parallelism, self.max_parallelism))


@dataclass(frozen=True)
class JobVertex:
    """A JobVertex (an operator chain) as it runs: ``max_parallelism`` is its number of key
    groups; ``keyed`` when its input is partitioned by key; ``source_partitions`` for a Kafka
    source, the partitions it reads."""

    vertex_id: str
    parallelism: int
    max_parallelism: int
    keyed: bool = False
    source_partitions: int | None = None

    def alignment(self) -> tuple[int, str] | None:
        """What the parallelism should divide evenly, and its name: a Kafka source's
        partitions (a subtask beyond them idles) or a keyed vertex's key groups."""
        if self.source_partitions is not None:
            return self.source_partitions, "partitions"
        return (self.max_parallelism, "key groups") if self.keyed else None

    def limit(self) -> tuple[int, str]:
        """The parallelism it never exceeds, and why."""
        if self.source_partitions is not None and self.source_partitions < self.max_parallelism:
            return self.source_partitions, f"{self.source_partitions} partitions"
        return self.max_parallelism, f"max parallelism {self.max_parallelism}"


@dataclass(frozen=True)
class Topology:
    """The JobGraph: its vertices and its edges (upstream id, downstream id), a DAG."""

    vertices: tuple[JobVertex, ...]
    edges: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        known = {v.vertex_id for v in self.vertices}
        if len(known) != len(self.vertices):
            raise ValueError("two vertices have the same id")
        if unknown := {vid for edge in self.edges for vid in edge} - known:
            raise ValueError(f"edges join unknown vertices {sorted(unknown)}")

    def inputs(self) -> dict[str, list[str]]:
        """Each vertex's upstream vertices (none for a source)."""
        inputs: dict[str, list[str]] = {v.vertex_id: [] for v in self.vertices}
        for upstream, downstream in self.edges:
            inputs[downstream].append(upstream)
        return inputs


@dataclass(frozen=True)
class VertexMetrics:
    """A vertex's rates over the metrics window, all subtasks together (records/s).

    ``records_in_rate`` is what it processed (a source: what it read); ``busy_ratio`` the mean
    share of its subtasks' time spent processing. A source's ``arrival_rate`` is what reached
    the external system (None when unmeasured: what it read is taken as what arrived) and
    ``backlog`` the records waiting there."""

    records_in_rate: float
    records_out_rate: float
    busy_ratio: float
    arrival_rate: float | None = None
    backlog: float = 0.0

    def true_rate(self, parallelism: int) -> float | None:
        """Records a subtask processes per busy second; None when no work was measured."""
        if self.busy_ratio < MIN_BUSY_RATIO:
            return None
        rate = self.records_in_rate / parallelism / self.busy_ratio
        return rate if rate > 0 else None

    def output_ratio(self) -> float:
        """Records out per record in; 1 when nothing came in."""
        return self.records_out_rate / self.records_in_rate if self.records_in_rate > 0 else 1.0


@dataclass(frozen=True)
class Recommendation:
    """A vertex's parallelism from ``parallelism`` to ``new_parallelism``, with what explains
    it: the target rate it must process, a subtask's true rate (None: not measured), the busy
    ratio, a source's backlog, and the reasons in words."""

    vertex_id: str
    parallelism: int
    new_parallelism: int
    target_rate: float
    true_rate: float | None
    busy_ratio: float
    backlog: float | None
    reason: str


def recommend(topology: Topology, metrics: Mapping[str, VertexMetrics],
              config: AutoscalerConfig) -> tuple[Recommendation, ...]:
    """A recommendation per vertex, in the topology's order, from the window's metrics."""
    inputs = topology.inputs()
    target: dict[str, float] = {}
    for vid in TopologicalSorter(inputs).static_order():
        target[vid] = (sum(target[u] * metrics[u].output_ratio() for u in inputs[vid])
                       if inputs[vid] else source_rate(metrics[vid], config))
    return tuple(_recommend(v, metrics[v.vertex_id], target[v.vertex_id],
                            None if inputs[v.vertex_id] else metrics[v.vertex_id].backlog, config)
                 for v in topology.vertices)


def source_rate(metrics: VertexMetrics, config: AutoscalerConfig) -> float:
    """A source's target rate: what arrives, and its backlog within the catch-up duration."""
    arrival = metrics.records_in_rate if metrics.arrival_rate is None else metrics.arrival_rate
    return arrival + metrics.backlog / config.catch_up_duration


def _recommend(vertex: JobVertex, metrics: VertexMetrics, target_rate: float,
               backlog: float | None, config: AutoscalerConfig) -> Recommendation:
    """Kept within the utilization boundary or without evidence, else sized for the target
    utilization; then bounded, and aligned when it changes."""
    current = vertex.parallelism
    true_rate = metrics.true_rate(current)
    kept: str | None = None
    if true_rate is None:
        wanted, kept = (current, "no busy time measured") if target_rate > 0 else (1, None)
    elif abs(target_rate / (true_rate * current) - config.target_utilization) \
            <= config.utilization_boundary:
        wanted, kept = current, "within utilization bounds"
    else:
        needed = target_rate / (true_rate * config.target_utilization)
        wanted = max(1, _ceil(min(needed, UPPER_BOUND_MAX_PARALLELISM)))
    steps = _bounds(vertex, config)
    new, notes = _bounded(wanted, steps)
    alignment = vertex.alignment()
    if kept is None and alignment is not None:
        (low, _), (high, _) = _bounded(1, steps), _bounded(steps[0][1], steps)
        n, unit = alignment
        if (even := aligned(new, n, low, high)) != new:
            new, notes = even, [*notes, f"aligned to {n} {unit}"]
    first = kept or ("no records to process" if target_rate <= 0 else
                     "scale up" if new > current else "scale down" if new < current
                     else "no change")
    return Recommendation(vertex.vertex_id, current, new, target_rate, true_rate,
                          metrics.busy_ratio, backlog, ", ".join([first, *notes]))


def _bounds(vertex: JobVertex, config: AutoscalerConfig) -> list[tuple[int, int, str]]:
    """The intervals a parallelism is clamped to in turn, each with the note when it bites:
    the factors of one decision, the configured bounds (over the factors), then the vertex's
    own limit (over everything)."""
    current = vertex.parallelism
    low, high = config.bounds(vertex.vertex_id)
    limit, why = vertex.limit()
    return [(max(1, _ceil(current * (1 - config.max_scale_down_factor))),
             _ceil(current * (1 + config.max_scale_up_factor)), "bounded by max factor"),
            (low, high, f"bounded by parallelism bounds [{low}, {high}]"),
            (1, limit, f"bounded by {why}")]


def _bounded(parallelism: int, steps: list[tuple[int, int, str]]) -> tuple[int, list[str]]:
    notes: list[str] = []
    for low, high, note in steps:
        if (clamped := min(max(parallelism, low), high)) != parallelism:
            parallelism, notes = clamped, [*notes, note]
    return parallelism, notes


def aligned(parallelism: int, n: int, low: int, high: int) -> int:
    """The parallelism that spreads ``n`` key groups or partitions evenly: the smallest
    divisor of ``n`` from ``parallelism`` up to ``high``, else the largest from ``low`` (less
    parallelism than asked for rather than more than allowed), else ``parallelism``."""
    divisors = [d for d in range(max(low, 1), min(high, n) + 1) if n % d == 0]
    above = [d for d in divisors if d >= parallelism]
    return above[0] if above else divisors[-1] if divisors else parallelism


def _ceil(x: float) -> int:
    """Rounded up, rates' floating-point noise aside (10.000000001 subtasks are 10)."""
    return math.ceil(round(x, 6))
