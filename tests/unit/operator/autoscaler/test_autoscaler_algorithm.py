"""DS2's parallelism per JobVertex for a job of epochs: target rates down the DAG, the job's
utilization (its stages one after another) and its boundary, the fewest subtasks with cheap
vertices kept, bounds and factors, alignment to key groups and Kafka partitions, and a
simulated pipeline that converges to its bottleneck's parallelism."""

from __future__ import annotations

import math
from itertools import count, pairwise
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from simulated_stages import Stage, epoch_cost, epoch_flows

from dataflow_operator.autoscaler.algorithm import (
    AutoscalerConfig,
    JobVertex,
    Recommendation,
    Topology,
    VertexMetrics,
    recommend,
)

pytestmark = pytest.mark.unit



def ds2_config(**options: Any) -> AutoscalerConfig:
    """Options that size by DS2 alone: no restart's arrivals to catch up (their share is
    tested on its own), a backlog caught up within 5 minutes."""
    return AutoscalerConfig(**{"restart_time": 0.0, "catch_up_duration": 300.0, **options})


CONFIG = ds2_config()


def run_window(stages: list[Stage], arrival: float, backlog: float,
               seconds: int = 600) -> tuple[dict[str, VertexMetrics], float]:
    """The window's metrics of a job reading a Kafka topic, a second at a time, and the
    backlog after it: its epochs take what waits as fast as their stages, one after another,
    process it, and each vertex is busy for what it processes over its capacity."""
    processed = {s.vertex_id: [0.0, 0.0, 0.0] for s in stages}  # in, out, busy subtask-seconds
    for _ in range(seconds):
        available = backlog + arrival
        flow, = epoch_flows([available], [epoch_cost(stages)])
        backlog = available - flow
        for s in stages:
            counters = processed[s.vertex_id]
            counters[0] += flow
            counters[2] += flow / s.true_rate
            flow *= s.selectivity
            counters[1] += flow
    metrics = {s.vertex_id: VertexMetrics(
        processed[s.vertex_id][0] / seconds, processed[s.vertex_id][1] / seconds,
        processed[s.vertex_id][2] / seconds / s.parallelism) for s in stages}
    source = stages[0].vertex_id
    metrics[source] = VertexMetrics(metrics[source].records_in_rate,
                                    metrics[source].records_out_rate,
                                    metrics[source].busy_ratio, arrival, backlog)
    return metrics, backlog


def topology_of(stages: list[Stage]) -> Topology:
    ids = [s.vertex_id for s in stages]
    return Topology(tuple(JobVertex(s.vertex_id, s.parallelism, 128) for s in stages),
                    tuple(pairwise(ids)))


def by_id(recommendations: tuple[Recommendation, ...]) -> dict[str, Recommendation]:
    return {r.vertex_id: r for r in recommendations}


def test_a_slow_middle_operator_converges_to_the_target_utilization() -> None:
    # DS2's example: 1000 records/s arrive; the middle vertex processes 100 records/s per
    # subtask and keeps half of them; the source and the sink are fast.
    stages = [Stage("source", 100_000, 1.0, 1), Stage("filter", 100, 0.5, 1),
              Stage("sink", 50_000, 0.0, 1)]
    backlog, history = 0.0, []
    for _ in range(6):
        metrics, backlog = run_window(stages, 1000, backlog)
        recs = by_id(recommend(topology_of(stages), metrics, CONFIG))
        history.append({s.vertex_id: s.parallelism for s in stages})
        for s in stages:
            s.parallelism = recs[s.vertex_id].new_parallelism
    assert history[0] == {"source": 1, "filter": 1, "sink": 1}
    changes = [i for i in range(1, len(history)) if history[i] != history[i - 1]]
    assert 1 <= len(changes) <= 2 and changes[-1] <= 2, history
    assert all(h["source"] == 1 and h["sink"] == 1 for h in history)
    # Up for the load and the backlog, then down to about the least parallelism that keeps
    # the filter at or under 70 % busy (a decision scales down to 40 % at most), no backlog.
    least = next(p for p in count(1) if 1000 / (100 * p) <= CONFIG.target_utilization)
    assert history[1]["filter"] > least and least <= history[-1]["filter"] <= least + 2
    assert backlog == 0 and 0.5 < metrics["filter"].busy_ratio <= 0.7
    assert recs["filter"].reason == "within utilization bounds"


def test_the_first_decision_sizes_for_the_backlog_too() -> None:
    stages = [Stage("source", 100_000, 1.0, 1), Stage("filter", 100, 0.5, 1),
              Stage("sink", 50_000, 0.0, 1)]
    metrics, backlog = run_window(stages, 1000, 0.0)
    assert backlog == pytest.approx(900 * 600, rel=1e-3)  # 100 of 1000 records/s processed
    rec = by_id(recommend(topology_of(stages), metrics, CONFIG))["filter"]
    assert rec.true_rate == pytest.approx(100)
    assert rec.target_rate == pytest.approx(1000 + backlog / CONFIG.catch_up_duration)
    assert rec.new_parallelism * 100 * CONFIG.target_utilization >= rec.target_rate
    assert rec.reason == "scale up" and rec.backlog is None


def test_target_rates_flow_through_output_ratios_over_fan_out_and_joins() -> None:
    # source -> a (doubles) and source -> b (halves); a and b -> join.
    vertices = (JobVertex("join", 1, 128), JobVertex("b", 1, 128), JobVertex("a", 1, 128),
                JobVertex("source", 1, 128))
    edges = (("a", "join"), ("source", "a"), ("b", "join"), ("source", "b"))
    metrics = {"source": VertexMetrics(100, 100, 0.5, arrival_rate=100, backlog=3_000),
               "a": VertexMetrics(100, 200, 0.5), "b": VertexMetrics(100, 50, 0.5),
               "join": VertexMetrics(250, 0, 0.5)}
    recs = recommend(Topology(vertices, edges), metrics, CONFIG)
    assert [r.vertex_id for r in recs] == ["join", "b", "a", "source"]  # the order given
    targets = {r.vertex_id: r.target_rate for r in recs}
    assert targets == pytest.approx({"source": 110, "a": 110, "b": 110, "join": 275})
    assert by_id(recs)["source"].backlog == 3_000


def test_a_source_without_an_arrival_measure_targets_what_it_read() -> None:
    topology = Topology((JobVertex("gen", 2, 128),))
    rec, = recommend(topology, {"gen": VertexMetrics(300, 300, 0.5)}, CONFIG)
    assert rec.target_rate == 300 and rec.true_rate == 300


@pytest.mark.parametrize(("arrival", "new_parallelism", "reason"), [
    (1_100, 24, "scale up"), (800, 10, "within utilization bounds"),
    (300, 10, "within utilization bounds"), (200, 5, "scale down")])
def test_a_restart_s_arrivals_are_sized_for_and_kept_room_for_by_a_scale_down(
        arrival: float, new_parallelism: int, reason: str) -> None:
    # 10 subtasks of 100 records/s each, as busy as the arrival rate makes them; a restart's
    # arrivals caught up within the catch-up duration add half the arrival rate. Only the
    # steady load (above 1.0) scales up: 800 records/s is kept though 1200 would not be.
    # A scale-down needs the load with the restart's share below 0.4: 300 records/s is kept
    # though DS2 alone would scale it down, 200 is not. Either is sized with that share.
    config = ds2_config(restart_time=150.0, max_scale_down_factor=0.9)
    topology = Topology((JobVertex("source", 1, 128), JobVertex("map", 10, 128)),
                        (("source", "map"),))
    metrics = {"source": VertexMetrics(arrival, arrival, 0.0, arrival_rate=arrival),
               "map": VertexMetrics(arrival, arrival, arrival / 1000)}
    rec = by_id(recommend(topology, metrics, config))["map"]
    assert rec.target_rate == pytest.approx(1.5 * arrival)
    assert (rec.new_parallelism, rec.reason) == (new_parallelism, reason)
    if reason != "within utilization bounds":
        assert rec.new_parallelism == math.ceil(1.5 * arrival / 100 / 0.7)


@pytest.mark.parametrize(("busy", "kept"), [(0.45, True), (0.95, True), (0.35, False),
                                            (1.0, False)])
def test_utilization_within_the_boundary_keeps_the_parallelism(busy: float, kept: bool) -> None:
    # 10 subtasks of 100 records/s each; the target rate sets the utilization.
    topology = Topology((JobVertex("source", 1, 128), JobVertex("map", 10, 128)),
                        (("source", "map"),))
    target = busy * 1000 + (1 if busy == 1.0 else 0)
    metrics = {"source": VertexMetrics(target, target, 0.0, arrival_rate=target),
               "map": VertexMetrics(target, target, target / 1000)}
    rec = by_id(recommend(topology, metrics, CONFIG))["map"]
    assert (rec.new_parallelism == 10) is kept
    if kept:
        assert rec.reason == "within utilization bounds"
    else:
        assert rec.new_parallelism == math.ceil(target / 70)


def _keyed_at(target: float, current: int, *, config: AutoscalerConfig = CONFIG,
              keyed: bool = True, max_parallelism: int = 128) -> Recommendation:
    """A vertex of ``current`` subtasks of 100 records/s each, to process ``target`` records/s
    (its source's busy time unmeasured: the vertex alone fills the epochs)."""
    topology = Topology((JobVertex("source", 1, 128),
                         JobVertex("agg", current, max_parallelism, keyed=keyed)),
                        (("source", "agg"),))
    metrics = {"source": VertexMetrics(target, target, 0.0, arrival_rate=target),
               "agg": VertexMetrics(target, target, target / (100 * current))}
    return by_id(recommend(topology, metrics, config))["agg"]


def _kafka_source_at(arrival: float, current: int, partitions: int = 12) -> Recommendation:
    topology = Topology((JobVertex("kafka", current, 128, source_partitions=partitions),))
    metrics = {"kafka": VertexMetrics(50 * current, 50 * current, 0.5, arrival_rate=arrival)}
    rec, = recommend(topology, metrics, CONFIG)
    return rec


def test_a_keyed_vertex_is_aligned_to_its_key_groups() -> None:
    up = _keyed_at(350, 2)  # wants 5
    assert (up.new_parallelism, up.reason) == (8, "scale up, aligned to 128 key groups")
    assert _keyed_at(350, 2, keyed=False).new_parallelism == 5
    assert _keyed_at(7_000, 40).new_parallelism == 128  # wants 100
    capped = _keyed_at(7_000, 40, config=ds2_config(max_parallelism=100))
    assert capped.new_parallelism == 64  # no divisor of 128 in [100, 100]: the largest below
    assert "aligned to 128 key groups" in capped.reason
    beyond = _keyed_at(20_000, 40, max_parallelism=90, keyed=False)  # wants 286
    assert beyond.new_parallelism == 90 and "bounded by max parallelism 90" in beyond.reason


def test_a_kafka_source_is_aligned_to_its_partitions_and_never_exceeds_them() -> None:
    # 100 records/s per subtask: 350 records/s want 5, 1400 want 20.
    five = _kafka_source_at(350, 2)
    assert (five.new_parallelism, five.reason) == (6, "scale up, aligned to 12 partitions")
    twenty = _kafka_source_at(1_400, 4)
    assert (twenty.new_parallelism, twenty.reason) == (12, "scale up, bounded by 12 partitions")
    assert _kafka_source_at(1_400, 4, partitions=200).new_parallelism == 20  # divides 200
    # Kept within the boundary, yet brought down to the partitions it can read.
    over = _kafka_source_at(1_400, 16)
    assert over.new_parallelism == 12 and over.reason.startswith("within utilization bounds")


def test_configured_bounds_and_per_vertex_bounds() -> None:
    # 100 records/s per subtask; 1500 records/s want 22.
    assert _keyed_at(1_500, 10, keyed=False).new_parallelism == 22
    bounded = _keyed_at(1_500, 10, keyed=False, config=ds2_config(max_parallelism=16))
    assert (bounded.new_parallelism, bounded.reason) == (
        16, "scale up, bounded by parallelism bounds [1, 16]")
    per_vertex = ds2_config(max_parallelism=16, vertex_bounds={"agg": (2, 30)})
    assert _keyed_at(1_500, 10, keyed=False, config=per_vertex).new_parallelism == 22
    floor = ds2_config(min_parallelism=4)
    assert _keyed_at(100, 5, keyed=False, config=floor).new_parallelism == 4  # wants 2
    assert _keyed_at(100, 5, keyed=False).new_parallelism == 2
    # The vertex's own limit is above any configured bound.
    assert _keyed_at(100, 5, keyed=False, max_parallelism=3,
                     config=ds2_config(min_parallelism=8)).new_parallelism == 3


def test_a_decision_changes_the_parallelism_by_at_most_the_max_factors() -> None:
    doubling = ds2_config(max_scale_up_factor=1.0)
    up = _keyed_at(1_500, 3, keyed=False, config=doubling)  # wants 22
    assert (up.new_parallelism, up.reason) == (6, "scale up, bounded by max factor")
    down = _keyed_at(10, 10, keyed=False)  # wants 1; 0.6 allows down to 40 %
    assert (down.new_parallelism, down.reason) == (4, "scale down, bounded by max factor")
    halving = ds2_config(max_scale_down_factor=0.5)
    assert _keyed_at(10, 7, keyed=False, config=halving).new_parallelism == 4
    # Configured bounds are above the factors.
    pinned = ds2_config(vertex_bounds={"agg": (1, 2)})
    assert _keyed_at(10, 10, keyed=False, config=pinned).new_parallelism == 2
    # Alignment stays within the factors: 128 key groups, wants 22, at most 6 -> 4.
    assert _keyed_at(1_500, 3, config=doubling).new_parallelism == 4


def test_a_vertex_with_no_busy_time_measured_keeps_its_parallelism() -> None:
    topology = Topology((JobVertex("source", 4, 128), JobVertex("map", 6, 128)),
                        (("source", "map"),))
    # Records reach it, but it measured no busy time: its capacity is unknown.
    metrics = {"source": VertexMetrics(500, 500, 0.2, arrival_rate=500),
               "map": VertexMetrics(500, 500, 0.0)}
    rec = by_id(recommend(topology, metrics, CONFIG))["map"]
    assert (rec.new_parallelism, rec.true_rate, rec.reason) == (
        6, None, "no processing rate measured")
    # A source that read nothing passes on what arrives (output ratio 1), sized from nothing.
    silent = {"source": VertexMetrics(0, 0, 0.0, arrival_rate=500),
              "map": VertexMetrics(0, 0, 0.0)}
    recs = by_id(recommend(topology, silent, CONFIG))
    assert recs["map"].target_rate == 500
    assert {r.new_parallelism for r in recs.values()} == {4, 6}


def test_an_idle_vertex_is_scaled_down_to_its_lower_bound() -> None:
    topology = Topology((JobVertex("source", 10, 128), JobVertex("map", 2, 128)),
                        (("source", "map"),))
    idle = {"source": VertexMetrics(0, 0, 0.0, arrival_rate=0),
            "map": VertexMetrics(0, 0, 0.0)}
    recs = by_id(recommend(topology, idle, ds2_config(min_parallelism=2)))
    assert (recs["source"].new_parallelism, recs["source"].reason) == (
        4, "no records to process, bounded by max factor")
    assert (recs["map"].new_parallelism, recs["map"].reason) == (
        2, "no records to process, bounded by parallelism bounds [2, 200]")


def test_options_and_topologies_are_checked() -> None:
    for bad in ({"target_utilization": 0.0}, {"min_parallelism": 5, "max_parallelism": 4},
                {"vertex_bounds": {"v": (0, 3)}}, {"max_scale_down_factor": 1.0},
                {"catch_up_duration": 0.0}, {"max_samples": 1}):
        with pytest.raises(ValueError, match="invalid autoscaler options"):
            ds2_config(**bad)
    with pytest.raises(ValueError, match="unknown vertices"):
        Topology((JobVertex("a", 1, 8),), (("a", "b"),))
    with pytest.raises(ValueError, match="same id"):
        Topology((JobVertex("a", 1, 8), JobVertex("a", 2, 8)))
    cycle = Topology((JobVertex("a", 1, 8), JobVertex("b", 1, 8)), (("a", "b"), ("b", "a")))
    with pytest.raises(ValueError, match="cycle"):
        recommend(cycle, {v: VertexMetrics(1, 1, 0.5) for v in "ab"}, CONFIG)


@given(n=st.integers(1, 512), current=st.integers(1, 64), demand=st.floats(0.1, 400),
       bounds=st.tuples(st.integers(1, 600), st.integers(1, 600)))
def test_a_keyed_vertex_takes_the_least_divisor_of_its_key_groups_that_keeps_up(
        n: int, current: int, demand: float, bounds: tuple[int, int]) -> None:
    low, high = sorted(bounds)
    config = ds2_config(vertex_bounds={"v": (low, high)}, utilization_boundary=0.0)
    vertex = JobVertex("v", min(current, n), n, keyed=True)
    busy = demand / vertex.parallelism  # 1 record/s per busy subtask: demand records/s
    rec, = recommend(Topology((vertex,)), {"v": VertexMetrics(demand, demand, busy)}, config)
    new = rec.new_parallelism
    allowed = [p for p in range(1, n + 1) if low <= p <= high
               and max(1, math.ceil(round(vertex.parallelism * 0.4, 6))) <= p]
    divisors = [p for p in allowed if n % p == 0] or allowed
    if not divisors:  # the bounds lie beyond its key groups: its limit holds
        assert new == min(n, max(low, 1)) or new <= n
        return
    assert new in divisors
    keeping_up = [p for p in divisors if demand / p <= config.target_utilization + 1e-9]
    assert new == (keeping_up[0] if keeping_up else divisors[-1])


@given(current=st.integers(1, 64), partitions=st.none() | st.integers(1, 48),
       keyed=st.booleans(), rate=st.floats(0, 50_000), busy=st.floats(0, 1),
       bounds=st.tuples(st.integers(1, 80), st.integers(1, 80)))
@example(current=64, partitions=None, keyed=False, rate=5e-324, busy=1.0, bounds=(1, 80))
@example(current=1, partitions=None, keyed=True, rate=1e-300, busy=0.002, bounds=(1, 80))
def test_recommendations_stay_within_every_bound(current: int, partitions: int | None,
                                                 keyed: bool, rate: float, busy: float,
                                                 bounds: tuple[int, int]) -> None:
    low, high = sorted(bounds)
    vertex = JobVertex("v", current, 64, keyed=keyed, source_partitions=partitions)
    config = ds2_config(vertex_bounds={"v": (low, high)}, max_scale_up_factor=3.0)
    rec, = recommend(Topology((vertex,)),
                     {"v": VertexMetrics(rate, rate, busy, arrival_rate=rate * 1.5)}, config)
    limit = min(64, partitions or 64)
    assert 1 <= rec.new_parallelism <= limit
    if low <= limit:
        assert low <= rec.new_parallelism <= high
    if rec.new_parallelism > current:
        assert rec.new_parallelism <= 4 * current or rec.new_parallelism <= low
    if "aligned" in rec.reason:
        assert (partitions or 64) % rec.new_parallelism == 0


def _epoch(*vertices: tuple[str, int, float, float]) -> tuple[Topology, dict[str, VertexMetrics]]:
    """A linear job of (id, parallelism, records/s, busy ratio) vertices, no backlog."""
    ids = [v[0] for v in vertices]
    topology = Topology(tuple(JobVertex(vid, p, 128) for vid, p, _, _ in vertices),
                        tuple(pairwise(ids)))
    metrics = {vid: VertexMetrics(rate, rate, busy) for vid, _, rate, busy in vertices}
    first = vertices[0]
    metrics[first[0]] = VertexMetrics(first[2], first[2], first[3], arrival_rate=first[2])
    return topology, metrics


def test_the_stages_of_an_epoch_add_up() -> None:
    # Two vertices each busy half the time: alone each is within 0.7 +- 0.3, yet an epoch
    # runs them one after another, so the job is busy all the time and falls behind.
    topology, metrics = _epoch(("a", 2, 100, 0.5), ("b", 2, 100, 0.5))
    recs = recommend(topology, metrics, CONFIG)
    assert {r.reason for r in recs} >= {"scale up"}
    utilization = sum(1 / r.new_parallelism for r in recs)  # demand 1 each
    assert utilization <= CONFIG.target_utilization
    assert sum(r.new_parallelism for r in recs) <= 7  # 3 + 3, or 2 + 5 (one change fewer)
    # Together within the boundary: nothing changes, though one alone is far under target.
    topology, metrics = _epoch(("a", 4, 100, 0.1), ("b", 2, 100, 0.5))
    assert {r.reason for r in recommend(topology, metrics, CONFIG)} == {
        "within utilization bounds"}


def test_the_fewest_subtasks_go_to_the_costliest_vertex_and_cheap_ones_keep_theirs() -> None:
    # demand (busy subtasks needed): source 0.02, slow 8, sink 0.02. Two subtasks each
    # for source and sink would save the slow vertex one (2 + 12 + 2 < 1 + 13 + 1 + 2).
    topology, metrics = _epoch(("source", 1, 400, 0.02), ("slow", 8, 400, 1.0),
                               ("sink", 1, 400, 0.02))
    recs = by_id(recommend(topology, metrics, CONFIG))
    assert [recs[v].new_parallelism for v in ("source", "slow", "sink")] == [1, 13, 1]
    assert recs["source"].reason == recs["sink"].reason == "no change"
    assert 0.04 + 8 / 13 <= 0.7 < 0.04 + 8 / 12
    # Costlier, they are raised too: 20 subtasks (2 + 16 + 2, or 3 + 15 + 2) instead of
    # 1 + 27 + 1.
    topology, metrics = _epoch(("source", 1, 400, 0.2), ("slow", 8, 400, 1.0),
                               ("sink", 1, 400, 0.2))
    source, slow, sink = (r.new_parallelism for r in recommend(topology, metrics, CONFIG))
    assert source > 1 and sink > 1 and source + slow + sink == 20
    assert 0.2 / source + 8 / slow + 0.2 / sink <= 0.7
    # A vertex that costs as much as another is scaled as much.
    topology, metrics = _epoch(("a", 2, 400, 1.0), ("b", 2, 400, 1.0))
    assert {r.new_parallelism for r in recommend(topology, metrics, CONFIG)} == {6}
    # In between: a costly source gets the square root of its share, not its DS2 alone.
    topology, metrics = _epoch(("source", 1, 400, 1.0), ("slow", 4, 400, 1.0))
    recs = by_id(recommend(topology, metrics, CONFIG))
    source, slow = recs["source"].new_parallelism, recs["slow"].new_parallelism
    assert 1 / source + 4 / slow <= 0.7 and source < slow
    assert source + slow == min(p + q for p in range(1, 40) for q in range(1, 40)
                                if 1 / p + 4 / q <= 0.7 + 1e-9)


def test_records_out_to_several_outputs_are_not_counted_for_each() -> None:
    # The source writes every record to both a and b: its records out are twice its records
    # in; each of a and b receives what the source read.
    vertices = (JobVertex("source", 1, 128), JobVertex("a", 1, 128), JobVertex("b", 1, 128))
    edges = (("source", "a"), ("source", "b"))
    metrics = {"source": VertexMetrics(100, 200, 0.1, arrival_rate=300),
               "a": VertexMetrics(100, 100, 0.2), "b": VertexMetrics(100, 0, 0.2)}
    targets = {r.vertex_id: r.target_rate
               for r in recommend(Topology(vertices, edges), metrics, CONFIG)}
    assert targets == pytest.approx({"source": 300, "a": 300, "b": 300})


def test_a_thousand_vertices_of_32768_key_groups_are_planned() -> None:
    vertices = tuple(JobVertex(f"v{i}", 1 + i % 7, 32768, keyed=True) for i in range(1024))
    metrics = {v.vertex_id: VertexMetrics(1000.0, 1000.0, 0.9) for v in vertices}
    config = ds2_config(max_parallelism=32768)
    recs = recommend(Topology(vertices), metrics, config)
    assert all(32768 % r.new_parallelism == 0 for r in recs)
    demand = {v.vertex_id: 0.9 * v.parallelism for v in vertices}
    assert sum(demand[r.vertex_id] / r.new_parallelism for r in recs) <= 0.7
