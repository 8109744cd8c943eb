"""When the autoscaler decides and applies: a simulated job under a load that steps up and
down, stabilization and the metrics window, unhealthy jobs, the scale-down delay, noisy load,
and the memory that round-trips through JSON and stays bounded."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise

import pytest
from simulated_stages import Stage, epoch_cost, epoch_flows

from dataflow_engine.graph.states import JobStatus
from dataflow_operator.autoscaler.algorithm import AutoscalerConfig, JobVertex, Topology
from dataflow_operator.autoscaler.policy import (
    AutoscalerMemory,
    Decision,
    Evaluation,
    JobHealth,
    MetricSample,
    PendingScaleDown,
    VertexSample,
    evaluate,
    window,
)

pytestmark = pytest.mark.unit

#: No restart's arrivals to catch up (a redeploy of the simulated job is instant unless it is
#: given a restart time), a backlog caught up within 5 minutes.
CONFIG = AutoscalerConfig(metrics_window=600, stabilization_interval=120,
                          scale_down_delay=1800, restart_time=0.0, catch_up_duration=300.0)
EVERY = 60  # seconds between samples


class Job:
    """Linear pipelines of one job, each reading a Kafka topic, simulated a second at a time:
    its epochs take what waits as fast as their stages, one after another, process it; a
    vertex is busy for what it processes over a subtask's true rate. Redeployed, it processes
    nothing for ``restart`` seconds (records keep arriving), then its counters restart."""

    def __init__(self, *pipelines: tuple[Callable[[float], float], list[Stage]],
                 noise: random.Random | None = None, restart: float = 0.0) -> None:
        self.pipelines = pipelines
        self.noise = noise
        self.restart = restart
        self.time = self.running_since = 0.0
        self.arrived = {stages[0].vertex_id: 0.0 for _, stages in pipelines}
        self.backlog = dict.fromkeys(self.arrived, 0.0)
        self.counters = {s.vertex_id: [0.0, 0.0, 0.0] for _, ss in pipelines for s in ss}

    def _jitter(self) -> float:
        return 1 + self.noise.uniform(-0.1, 0.1) if self.noise else 1.0

    def run(self, seconds: int) -> None:
        for _ in range(seconds):
            available, rates = [], []
            for arrival, stages in self.pipelines:
                source = stages[0].vertex_id
                arrived = arrival(self.time) * self._jitter()
                self.arrived[source] += arrived
                available.append(self.backlog[source] + arrived)
                rates.append([s.true_rate * self._jitter() for s in stages])
            self.time += 1
            if self.time <= self.running_since:  # restarting: what arrived waits
                self.backlog = dict(zip(self.backlog, available, strict=True))
                continue
            costs = [epoch_cost(stages, r)
                     for (_, stages), r in zip(self.pipelines, rates, strict=True)]
            flows = epoch_flows(available, costs)
            for (_, stages), waiting, flow, stage_rates in zip(self.pipelines, available, flows,
                                                               rates, strict=True):
                self.backlog[stages[0].vertex_id] = waiting - flow
                for s, rate in zip(stages, stage_rates, strict=True):
                    counters = self.counters[s.vertex_id]
                    counters[0] += flow
                    counters[2] += 1000 * flow / rate
                    flow *= s.selectivity
                    counters[1] += flow

    def sample(self) -> MetricSample:
        return MetricSample(self.time, {vid: VertexSample(
            records_in, records_out, busy_ms, self.arrived.get(vid), self.backlog.get(vid))
            for vid, (records_in, records_out, busy_ms) in self.counters.items()})

    def topology(self) -> Topology:
        stages = [stages for _, stages in self.pipelines]
        return Topology(tuple(JobVertex(s.vertex_id, s.parallelism, 128) for ss in stages
                              for s in ss),
                        tuple((a.vertex_id, b.vertex_id) for ss in stages
                              for a, b in pairwise(ss)))

    def health(self) -> JobHealth:
        status = JobStatus.RUNNING if self.time > self.running_since else JobStatus.RESTARTING
        return JobHealth(status, status is JobStatus.RUNNING, 0, self.running_since)

    def parallelism(self, vertex_id: str) -> int:
        return next(s.parallelism for _, ss in self.pipelines for s in ss
                    if s.vertex_id == vertex_id)

    def redeploy(self, overrides: dict[str, int]) -> None:
        for _, stages in self.pipelines:
            for s in stages:
                s.parallelism = overrides.get(s.vertex_id, s.parallelism)
        self.counters = {vid: [0.0, 0.0, 0.0] for vid in self.counters}
        self.running_since = self.time + self.restart


def pipeline(arrival: Callable[[float], float], filter_parallelism: int,
             prefix: str = "") -> tuple[Callable[[float], float], list[Stage]]:
    """source -> filter (100 records/s per subtask, keeps half) -> sink; fast source, sink."""
    return arrival, [Stage(f"{prefix}source", 100_000, 1.0, 1),
                     Stage(f"{prefix}filter", 100, 0.5, filter_parallelism),
                     Stage(f"{prefix}sink", 50_000, 0.0, 1)]


def drive(job: Job, until: float, config: AutoscalerConfig = CONFIG,
          memory: AutoscalerMemory | None = None,
          health: Callable[[Job], JobHealth] = Job.health, deploy: bool = True,
          ) -> tuple[AutoscalerMemory, list[tuple[float, Evaluation]]]:
    """Evaluate every minute until ``until``, deploying what decisions apply (unless
    advisory); the memory and each evaluation with its time."""
    memory, steps = memory or AutoscalerMemory(), []
    while job.time < until:
        job.run(EVERY)
        evaluation = evaluate(memory, job.sample(), health(job), job.topology(), config,
                              job.time)
        memory = evaluation.memory
        steps.append((job.time, evaluation))
        if deploy and evaluation.decision is not None and evaluation.decision.applied:
            job.redeploy(dict(memory.overrides))
    return memory, steps


def decisions(steps: list[tuple[float, Evaluation]]) -> list[Decision]:
    return [e.decision for _, e in steps if e.decision is not None]


def check_scale_downs_waited(steps: list[tuple[float, Evaluation]], delay: float) -> None:
    """Every scale-down applied was recommended at every evaluation that could decide, for
    the delay before it."""
    for i, (time, evaluation) in enumerate(steps):
        for rec in evaluation.decision.applied if evaluation.decision else ():
            if rec.new_parallelism < rec.parallelism:
                deciding = [(t, e) for t, e in steps[:i] if e.waiting is None]
                streak = time
                for t, e in reversed(deciding):
                    if rec.vertex_id not in e.memory.pending:
                        break
                    streak = t
                assert time - streak >= delay, (rec, time, streak)


def test_a_step_up_scales_up_at_once_and_the_step_down_after_the_delay() -> None:
    up_at, down_at = 3_600, 4 * 3_600
    load = pipeline(lambda t: 1_000 if up_at <= t < down_at else 250, 4)
    job = Job(load)
    memory, before = drive(job, up_at)
    assert not decisions(before) and job.parallelism("filter") == 4  # 250 in 400: 63 % busy

    memory, during = drive(job, down_at, memory=memory)
    made = decisions(during)
    first = made[0]
    assert [r.vertex_id for r in first.applied] == ["filter"] and not first.pending
    assert first.applied[0].new_parallelism > 4 and first.time < up_at + CONFIG.metrics_window
    assert job.parallelism("filter") >= 10 and job.backlog["source"] == 0  # keeps up
    assert {r.vertex_id for d in made for r in d.applied} == {"filter"}
    high = job.parallelism("filter")

    memory, after = drive(job, down_at + 3 * 3_600, memory=memory)
    made = decisions(after)
    start = next(d for d in made if d.pending)
    assert not start.applied and start.pending[0].new_parallelism < high
    applied = next(d for d in made if d.applied)
    assert applied.time - start.time >= CONFIG.scale_down_delay
    final = job.parallelism("filter")
    assert final < high and 250 / (100 * final) <= CONFIG.target_utilization + 0.05
    check_scale_downs_waited(during + after, CONFIG.scale_down_delay)


@pytest.mark.parametrize("restart_time", [0.0, 900.0])
def test_a_scale_down_leaves_room_for_the_catch_up_after_its_restart(
        restart_time: float) -> None:
    # A redeploy stops the job for 15 minutes. Sized for the steady load alone, the
    # scale-downs after the step down fall behind by what arrived during their own restart,
    # and the last is undone by a scale-up (two restarts for nothing); sized with the
    # restart's arrivals caught up too, as Flink's restart.time does, the scale-down stands.
    down_at = 3 * 3_600
    job = Job(pipeline(lambda t: 1_000 if t < down_at else 200, 16), restart=900)
    config = replace(CONFIG, restart_time=restart_time, catch_up_duration=600)
    memory, _ = drive(job, down_at, config)
    assert job.parallelism("filter") == 16 and job.backlog["source"] == 0
    _, after = drive(job, down_at + 6 * 3_600, config, memory)
    changes = [(r.parallelism, r.new_parallelism) for d in decisions(after) for r in d.applied]
    assert changes and changes[0][1] < 16, changes
    if restart_time:
        assert all(new < old for old, new in changes), changes
        assert job.backlog["source"] == 0
    else:
        assert any(new > old for old, new in changes[1:]), changes  # the flapping it prevents


def test_a_scale_up_is_sized_with_the_other_vertices_where_they_are() -> None:
    # Pipelines a and b share the job's epochs: a is over-provisioned, which the job's
    # utilization hides until b's load steps up after 20 minutes.
    a = pipeline(lambda t: 100, 8, "a.")
    b = pipeline(lambda t: 250 if t < 1_200 else 1_000, 4, "b.")
    job = Job(a, b)
    memory, steps = drive(job, 2 * 3_600)
    made = decisions(steps)
    # A scale-up is sized with every other vertex where it is (a's scale-down would wait an
    # hour): it never counts on a scale-down, and then the job is within its bounds.
    assert made[0].time > 1_200 and all(not d.pending for d in made)
    assert all(r.new_parallelism > r.parallelism for d in made for r in d.applied)
    assert [r.vertex_id for r in made[0].applied] == ["b.filter"]
    assert job.parallelism("b.filter") > 4 and job.parallelism("a.filter") >= 8
    assert job.backlog == {"a.source": 0, "b.source": 0} and not memory.pending


def test_a_pending_scale_down_is_cancelled_when_the_load_returns() -> None:
    job = Job(pipeline(lambda t: 100 if 1_800 <= t < 2_700 else 250, 4))
    memory, steps = drive(job, 3 * 3_600)
    made = decisions(steps)
    assert made and all(not d.applied for d in made), made
    assert [r.vertex_id for r in made[0].pending] == ["filter"]
    assert not memory.pending and job.parallelism("filter") == 4


def test_a_pending_scale_down_restarts_when_the_parallelism_changed_meanwhile() -> None:
    long_ago = -10 * CONFIG.scale_down_delay
    for recorded, applied in ((6, True), (8, False)):
        memory = AutoscalerMemory(pending={"filter": PendingScaleDown(long_ago, recorded)})
        memory, steps = drive(Job(pipeline(lambda t: 100, 6)), 1_800, memory=memory)
        first = decisions(steps)[0]
        assert bool(first.applied) is applied and bool(first.pending) is not applied
        if not applied:
            assert memory.pending["filter"] == PendingScaleDown(first.time, 6)


def test_an_advisory_decision_is_not_repeated_before_a_new_window() -> None:
    job = Job(pipeline(lambda t: 1_000, 1))
    memory, steps = drive(job, 3_600, deploy=False)
    made = decisions(steps)
    gaps = [b.time - a.time for a, b in pairwise(made)]  # a new window each
    assert len(made) == 5 and all(600 < gap <= 600 + EVERY for gap in gaps)
    filters = [next(r for r in d.applied if r.vertex_id == "filter") for d in made]
    assert all(r.parallelism == 1 for r in filters) and job.parallelism("filter") == 1
    assert memory.overrides["filter"] == filters[-1].new_parallelism


def test_no_decision_before_stabilization_and_a_full_window() -> None:
    job = Job(pipeline(lambda t: 1_000, 1))
    _, steps = drive(job, 2 * 3_600)
    first, second = decisions(steps)[:2]
    assert first.time == CONFIG.stabilization_interval + CONFIG.metrics_window
    waiting = [e.waiting for t, e in steps if t < first.time]
    assert waiting[0] == "stabilizing for 60 s more"
    assert waiting[1] == "collecting metrics: 0 of 600 s"
    assert waiting[-1] == "collecting metrics: 540 of 600 s" and None not in waiting
    # The deployment it started stabilizes and fills its window again before the next one.
    assert second.time - first.time >= CONFIG.stabilization_interval + CONFIG.metrics_window


@pytest.mark.parametrize(("trouble", "why"), [
    (JobHealth(JobStatus.RUNNING, True, 2, 0), "2 checkpoints failed in a row"),
    (JobHealth(JobStatus.RESTARTING, False, 0, 0), "the job is RESTARTING"),
    (JobHealth(JobStatus.RUNNING, False, 0, 0), "not every subtask is running")])
def test_no_decision_while_the_job_is_not_healthy(trouble: JobHealth, why: str) -> None:
    troubled = (3_300, 3_900)  # the window has samples when it starts

    def health(job: Job) -> JobHealth:
        healthy = job.health()
        if troubled[0] <= job.time < troubled[1]:
            return replace(trouble, running_since=healthy.running_since)
        return healthy

    # Over-provisioned, with a delay of 0: a decision is due whenever one may be made.
    job = Job(pipeline(lambda t: 100, 40))
    config = replace(CONFIG, scale_down_delay=0, max_scale_down_factor=0.1)
    _, steps = drive(job, 4 * 3_600, config, health=health)
    during = [e for t, e in steps if troubled[0] <= t < troubled[1]]
    assert during and all(e.decision is None and e.waiting == why and not e.memory.samples
                          for e in during)
    made = [d.time for d in decisions(steps)]
    assert any(t < troubled[0] for t in made)
    # The window refills after the trouble before the next decision.
    assert not [t for t in made if troubled[0] <= t < troubled[1] + config.metrics_window]
    assert any(t >= troubled[1] + config.metrics_window for t in made)


def test_noisy_load_makes_no_decisions_once_converged() -> None:
    job = Job(pipeline(lambda t: 1_000, 1), noise=random.Random(7))
    memory, steps = drive(job, 12 * 3_600)
    made = decisions(steps)
    assert made and made[-1].time < 4 * 3_600, [d.time for d in made]
    assert len(steps) == 12 * 60 and not memory.pending
    final = job.parallelism("filter")
    assert 0.5 <= 1_000 / (100 * final) <= 0.7 + 0.05
    check_scale_downs_waited(steps, CONFIG.scale_down_delay)


def test_a_counter_reset_or_a_missing_vertex_starts_a_new_window() -> None:
    topology = Topology((JobVertex("v", 1, 8),))

    def at(time: float, records: float) -> MetricSample:
        return MetricSample(time, {"v": VertexSample(records, records, records)})

    samples: tuple[MetricSample, ...] = ()
    for t in range(0, 300, 60):
        samples = window(samples, at(t, t * 10), topology, 0, CONFIG)
    assert [s.time for s in samples] == [0, 60, 120, 180, 240]
    assert window(samples, at(300, 5), topology, 0, CONFIG) == (at(300, 5),)  # restarted
    assert window(samples, MetricSample(300, {}), topology, 0, CONFIG) == samples
    # The same epoch's counters again (none ended since): nothing new; an earlier time is
    # another driver's.
    assert window(samples, at(240, 2_400), topology, 0, CONFIG) == samples
    assert window(samples, at(200, 2_000), topology, 0, CONFIG) == (at(200, 2_000),)
    assert window(samples, at(300, 3_000), topology, 100, CONFIG)[0].time == 120


def test_the_window_slides_and_is_thinned_to_its_bound() -> None:
    topology = Topology((JobVertex("v", 1, 8),))
    config = replace(CONFIG, max_samples=5)
    samples: tuple[MetricSample, ...] = ()
    for t in range(0, 3_000, 60):
        sample = MetricSample(t, {"v": VertexSample(t, t, t)})
        samples = window(samples, sample, topology, 0, config)
        assert len(samples) <= 5 and samples[-1] == sample
    times = [s.time for s in samples]
    # It spans the window, from the last sample kept at or before its start.
    assert times[0] <= times[-1] - config.metrics_window < times[1]
    gaps = [b - a for a, b in pairwise(times)]
    assert max(gaps) <= 2 * min(gaps)  # thinned evenly


def test_the_memory_round_trips_through_json_and_stays_bounded() -> None:
    config = replace(CONFIG, scale_down_delay=0, max_decisions=3, max_samples=4)
    load = pipeline(lambda t: 1_000 if (t // 1_800) % 2 else 200, 3)
    job = Job(load)
    memory = AutoscalerMemory()
    made = []
    for _ in range(10):
        memory, steps = drive(job, job.time + 3_600, config, memory)
        made += decisions(steps)
        assert len(memory.samples) <= 4 and len(memory.decisions) <= 3
        text = json.dumps(memory.to_dict(), allow_nan=False)
        assert AutoscalerMemory.from_dict(json.loads(text)) == memory
        memory = AutoscalerMemory.from_dict(json.loads(text))
    assert len(made) > 6 and memory.decisions == tuple(made[-3:])
    assert memory.overrides == {"filter": job.parallelism("filter")}
    waiting, _ = drive(Job(pipeline(lambda t: 10, 8)), 1_800)
    assert waiting.pending and waiting.samples and waiting.decisions
    assert AutoscalerMemory.from_dict(json.loads(json.dumps(waiting.to_dict()))) == waiting
