"""The parallelism each JobVertex needs, after DS2 (Kalavri et al., OSDI 2018) as
flink-kubernetes-operator's autoscaler applies it, for a job that runs in epochs.

A vertex's true processing rate is what a subtask processes per second of busy time: the rate
it would reach if it were never idle nor backpressured. The sources' target rate is what
arrives at the external system plus the backlog caught up within ``catch_up_duration``; it
flows down the DAG through each edge's output ratio, so every vertex is sized for the load
that will reach it once its upstream vertices keep up, in one decision rather than one
bottleneck at a time.

Flink's vertices run side by side, so DS2 sizes each for its own utilization. Here an epoch is
one Spark job whose stages run one after another: the job keeps up while the epoch's stages
together fill no more than the target utilization of the wall time, Σ demand/parallelism ≤ U,
where a vertex's demand is its target rate over its true rate (the subtasks it would keep
fully busy). The utilization boundary applies to that sum, and the parallelism that meets it
with the fewest subtasks gives each vertex a share of the epoch in proportion to the square
root of its demand (a Lagrange multiplier's answer), rounded to whole, aligned subtasks by a
greedy that adds the subtask saving the most epoch time per subtask. A vertex alone is sized as
DS2 sizes it.

A vertex with no busy time measured has no known capacity: it keeps its parallelism while
records are to reach it, and is sized as an idle vertex (to its lower bound) when none are.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from graphlib import TopologicalSorter

#: A busy ratio below this (1 ms per second) measures no work: the capacity is unknown.
MIN_BUSY_RATIO = 0.001


@dataclass(frozen=True)
class AutoscalerConfig:
    """The autoscaler's options, with the defaults of Flink's ``job.autoscaler.*``; durations
    in seconds. ``max_scale_up_factor`` 2.0 allows three times the parallelism in one decision
    (Flink's meaning); ``max_scale_down_factor`` 0.6 allows down to 40 % of it."""

    target_utilization: float = 0.7
    utilization_boundary: float = 0.3
    catch_up_duration: float = 1800.0
    #: How long a rescale stops the job's processing: what arrives meanwhile is to be caught
    #: up within ``catch_up_duration`` too, so the new parallelism is sized for it, and a
    #: scale-down must leave room for it (Flink's ``restart.time``).
    restart_time: float = 300.0
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
                and self.catch_up_duration > 0 and self.restart_time >= 0
                and self.max_scale_up_factor >= 0
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
    """A recommendation per vertex, in the topology's order, from the window's metrics.

    The parallelism is sized for the target rates with a restart's arrivals to catch up. The
    job is rescaled when its utilization leaves the boundary: above it without a restart's
    share (a scale-up for the steady load), below it with it (a scale-down that leaves room
    for the catch-up after its own restart, so it is not undone by a scale-up)."""
    target = target_rates(topology, metrics, config)
    steady = target_rates(topology, metrics, config, with_restart=False)
    sources = {vid for vid, ups in topology.inputs().items() if not ups}
    sizes = {v.vertex_id: _Sizing.of(v, metrics[v.vertex_id], target[v.vertex_id], config)
             for v in topology.vertices}
    measured = [s for s in sizes.values() if s.demand is not None]
    utilization = sum(s.utilization() for s in measured)
    steady_utilization = sum(s.utilization() * steady[s.vertex.vertex_id]
                             / target[s.vertex.vertex_id] for s in measured)
    kept = (steady_utilization - config.target_utilization <= config.utilization_boundary
            and config.target_utilization - utilization <= config.utilization_boundary)
    if not kept:
        _plan(measured, config.target_utilization, up=True)
        if not any(s.parallelism > s.vertex.parallelism for s in measured):
            _plan(measured, config.target_utilization, up=False)
    recommendations = []
    for vertex in topology.vertices:
        vid = vertex.vertex_id
        m = metrics[vid]
        new, reason = sizes[vid].result(kept)
        recommendations.append(Recommendation(
            vid, vertex.parallelism, new, target[vid], m.true_rate(vertex.parallelism),
            m.busy_ratio, m.backlog if vid in sources else None, reason))
    return tuple(recommendations)


def target_rates(topology: Topology, metrics: Mapping[str, VertexMetrics],
                 config: AutoscalerConfig, *, with_restart: bool = True) -> dict[str, float]:
    """Each vertex's target rate: a source's own, the others' their inputs' through the
    edges' output ratios."""
    inputs = topology.inputs()
    fan_out = Counter(upstream for upstream, _ in topology.edges)
    target: dict[str, float] = {}
    for vid in TopologicalSorter(inputs).static_order():
        target[vid] = (sum(target[u] * _edge_ratio(metrics[u], metrics[vid], len(inputs[vid]),
                                                   fan_out[u]) for u in inputs[vid])
                       if inputs[vid] else source_rate(metrics[vid], config, with_restart))
    return target


def _edge_ratio(upstream: VertexMetrics, downstream: VertexMetrics, inputs: int,
                outputs: int) -> float:
    """Records reaching ``downstream`` per record ``upstream`` processes. A vertex's records
    out count every output it writes to, so an edge's share of them is known only when the
    downstream vertex reads that edge alone (what it received) or the upstream one writes
    that edge alone; otherwise all of them is assumed, which sizes for more, never less."""
    if upstream.records_in_rate <= 0:
        return 1.0
    if inputs == 1 and outputs > 1:
        return downstream.records_in_rate / upstream.records_in_rate
    return upstream.output_ratio()


def source_rate(metrics: VertexMetrics, config: AutoscalerConfig,
                with_restart: bool = True) -> float:
    """A source's target rate: what arrives, and its backlog (with what arrives during a
    restart) within the catch-up duration."""
    arrival = metrics.records_in_rate if metrics.arrival_rate is None else metrics.arrival_rate
    restart = arrival * config.restart_time if with_restart else 0.0
    return arrival + (metrics.backlog + restart) / config.catch_up_duration


@dataclass
class _Sizing:
    """One vertex's sizing: its demand (None: unknown capacity), the parallelisms it may take
    (bounded, aligned), and the one the plan gives it."""

    vertex: JobVertex
    demand: float | None
    steps: list[tuple[int, int, str]]
    low: int
    high: int
    #: What the parallelisms divide evenly, and its name (None: any parallelism).
    alignment: tuple[int, str] | None
    parallelism: int = 0
    #: The plan wanted more of it than its upper bound allows, or less than its lower one.
    capped: bool = False
    floored: bool = False
    reason: str | None = None

    @classmethod
    def of(cls, vertex: JobVertex, metrics: VertexMetrics, target_rate: float,
           config: AutoscalerConfig) -> _Sizing:
        current = vertex.parallelism
        steps = _bounds(vertex, config)
        low, high = _bounded(1, steps)[0], _bounded(steps[0][1], steps)[0]
        alignment = vertex.alignment()
        if alignment is not None and not _divisors(alignment[0], low, high):
            alignment = None  # none within the bounds: any parallelism
        true_rate = metrics.true_rate(current)
        demand = None if true_rate is None else target_rate / true_rate
        sizing = cls(vertex, demand, steps, low, high, alignment, current)
        if target_rate <= 0:
            sizing.demand, sizing.reason = None, "no records to process"
        elif demand is None:
            sizing.reason = "no processing rate measured"
        return sizing

    def utilization(self, parallelism: int | None = None) -> float:
        """The share of the epoch it fills at the target rate with ``parallelism`` subtasks
        (its current ones by default)."""
        assert self.demand is not None
        return self.demand / (parallelism or self.vertex.parallelism)

    def allows(self, parallelism: int) -> bool:
        """It may take ``parallelism`` (within its bounds, aligned)."""
        return self.low <= parallelism <= self.high and (
            self.alignment is None or self.alignment[0] % parallelism == 0)

    def below(self, parallelism: float, low: int) -> int | None:
        """The largest parallelism it may take from ``low`` up to ``parallelism``."""
        top = min(math.floor(round(parallelism, 6)), self.high)
        if self.alignment is None:
            return top if top >= max(low, self.low) else None
        divisors = _all_divisors(self.alignment[0])
        i = bisect.bisect_right(divisors, top) - 1
        return divisors[i] if i >= 0 and divisors[i] >= max(low, self.low) else None

    def above(self, parallelism: float, high: int) -> int | None:
        """The smallest parallelism it may take from ``parallelism`` up to ``high``."""
        bottom = max(math.ceil(round(parallelism, 6)), self.low)
        if self.alignment is None:
            return bottom if bottom <= min(high, self.high) else None
        divisors = _all_divisors(self.alignment[0])
        i = bisect.bisect_left(divisors, bottom)
        return (divisors[i] if i < len(divisors) and divisors[i] <= min(high, self.high)
                else None)

    def cheapest(self, price: float, low: int, high: int) -> int:
        """The parallelism from ``low`` to ``high`` that costs least at ``price`` per second
        of epoch time: its subtasks, one more if it is raised, and the price of its share of
        the epoch. Either side of its current parallelism that cost is convex, so the
        least is next to the unconstrained optimum, √(price * demand), or at the side's end."""
        demand = self.demand
        assert demand is not None
        current = self.vertex.parallelism
        ideal = math.sqrt(price * demand)
        candidates = {self.below(ideal, low), self.above(ideal, high),
                      self.below(current, low), self.above(current + 1, high)}
        allowed = [p for p in candidates if p is not None and low <= p <= high]
        if not allowed:  # nothing allowed from low to high: the nearest allowed
            allowed = [self.above(low, self.high) or self.below(high, self.low) or low]
        return min(allowed, key=lambda p: (p + (p > current) + price * demand / p, p))

    def result(self, kept: bool) -> tuple[int, str]:
        """Its new parallelism and why."""
        current = self.vertex.parallelism
        if self.reason == "no records to process":
            new, notes = _bounded(1, self.steps)
            if not self.allows(new):
                new, notes = self.above(new, self.high) or new, [*notes, self._aligned()]
            return new, ", ".join([self.reason, *notes])
        if self.reason is not None or kept:
            new, notes = _bounded(current, self.steps)
            if not self.allows(new):
                aligned = self.above(new, self.high) or self.below(new, self.low) or new
                new, notes = aligned, [*notes, self._aligned()]
            return new, ", ".join([self.reason or "within utilization bounds", *notes])
        new, notes = self.parallelism, []
        held = (self.high if self.capped else self.low if self.floored and new == self.low
                else None)
        if held is not None and (note := _bound_note(held, self.steps, self.capped)):
            notes.append(note)
        if self.alignment is not None and new not in (current, held):
            notes.append(self._aligned())
        first = "scale up" if new > current else "scale down" if new < current else "no change"
        return new, ", ".join([first, *notes])

    def _aligned(self) -> str:
        assert self.alignment is not None
        n, unit = self.alignment
        return f"aligned to {n} {unit}"


def _plan(sizings: list[_Sizing], utilization: float, *, up: bool) -> None:
    """The parallelisms that bring Σ demand/parallelism within ``utilization`` at the least
    cost, each vertex raised (``up``) or each lowered, never both in one decision: a
    scale-down waits out its delay, so scale-ups are sized with every other vertex where it
    is. The cost of a plan is its subtasks, and one more per vertex it raises, so a cheap
    vertex keeps its parallelism unless raising it saves a subtask elsewhere (a rescale
    moves a vertex's state and its inputs' partitioning; Flink's DS2 leaves a vertex within
    its own bounds alone).

    Each vertex takes the parallelism that costs least at a price per second of epoch time
    (a Lagrange multiplier: at a price p the unconstrained optimum is √(p * demand), which
    gives each vertex a share of the epoch in proportion to the square root of its demand);
    the price is the least that meets the target, found by bisection, as each vertex's
    choice only grows with it. Then subtasks the rounding left over are taken back, the one
    that costs least epoch time first, while the target stays met."""
    bounds = {id(s): ((s.below(s.vertex.parallelism, s.low) or s.low, s.high) if up
                      else (s.low, max(s.vertex.parallelism, s.low))) for s in sizings}

    def choose(price: float) -> float:
        for s in sizings:
            s.parallelism = s.cheapest(price, *bounds[id(s)])
        return sum(s.utilization(s.parallelism) for s in sizings)

    high = max((((s.high + 2) ** 2) / (s.demand or 1.0) * 4 for s in sizings), default=1.0)
    met = _met(choose(high), utilization)
    if met:
        low = 0.0
        for _ in range(64):
            middle = (low + high) / 2 if high - low > 1e-9 * high else high
            if _met(choose(middle), utilization):
                high = middle
            else:
                low = middle
        total = choose(high)
        _take_back(sizings, total, utilization, bounds)
    for s in sizings:
        ideal = math.sqrt(high * (s.demand or 0.0)) if met else float("inf")
        s.capped = not met and s.parallelism == s.high
        s.floored = ideal < s.low


def _take_back(sizings: list[_Sizing], total: float, utilization: float,
               bounds: dict[int, tuple[int, int]]) -> None:
    """Lowers vertices a step at a time, the step that adds least epoch time per subtask
    first, while Σ demand/parallelism stays within ``utilization``."""
    heap: list[tuple[float, int, int]] = []

    def push(i: int) -> None:
        s = sizings[i]
        lower = s.below(s.parallelism - 1, bounds[id(s)][0])
        if lower is not None:
            added = s.utilization(lower) - s.utilization(s.parallelism)
            saved = s.parallelism - lower + (s.parallelism > s.vertex.parallelism >= lower)
            heapq.heappush(heap, (added / saved, i, lower))

    for i in range(len(sizings)):
        push(i)
    while heap:
        _, i, lower = heapq.heappop(heap)
        s = sizings[i]
        after = total - s.utilization(s.parallelism) + s.utilization(lower)
        if _met(after, utilization):
            s.parallelism, total = lower, after
            push(i)


def _met(total: float, utilization: float) -> bool:
    return round(total - utilization, 9) <= 0


def _bound_note(parallelism: int, steps: list[tuple[int, int, str]],
                upper: bool) -> str | None:
    """The note of the last bound that holds the parallelism where it is (a lower bound of 1
    holds nothing)."""
    for low, high, note in reversed(steps):
        if parallelism == (high if upper else low) and (upper or low > 1):
            return note
    return None


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


@functools.cache
def _all_divisors(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted({*small, *(n // d for d in small)}))


def _divisors(n: int, low: int, high: int) -> list[int]:
    """The divisors of ``n`` from ``low`` to ``high``, ascending."""
    return [d for d in _all_divisors(n) if low <= d <= high]


def _ceil(x: float) -> int:
    """Rounded up, rates' floating-point noise aside (10.000000001 subtasks are 10)."""
    return math.ceil(round(x, 6))
