"""The autoscaler through the operator on a real API server, local backend: a continuous job
from Kafka whose keyed vertex costs a fixed time per record is scaled up when its input steps
up, and down again once the input steps back down; its source and its sink keep their
parallelism, every decision shows in status.autoscaler and as a ScalingApplied Event, and
through every rescale (a savepoint upgrade) each record reaches the keyed state and the
transactional Kafka sink exactly once. The input pauses while the scale-up redeploys, so that
the time the test takes does not grow with how long a restart takes on the machine. The driver
is a local process, so the test needs no node (tests/conftest.py runs it in the spark tier's
worker).

It prints (pytest -s; and records as properties) what the autoscaler took: its decisions
until the slow vertex scaled up, and until it settled after the step down (a full window of
the new parallelism asking for no change), the seconds from each rescale's decision to the job
running again and to its first epoch done, and the source's peak backlog; on a failure, the
job's status second by second."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autoscaler_scenario import (
    BASE_RATE,
    FUNCTIONS,
    FUNCTIONS_SOURCE,
    KEYS,
    SINK,
    SLOW,
    SOURCE,
    STEP,
    Snapshot,
    Timeline,
    figures,
    manifest,
    seconds,
)
from kafka_helpers import RateProducer, new_topic, read_topic
from kube_helpers import Kube, wait_until
from operator_helpers import Operators, events

pytestmark = pytest.mark.k8s


def _settled(slow_id: str) -> Callable[[Snapshot], bool]:
    """The job runs the autoscaler's parallelism, which decided on a full window of it and
    asked for no change: neither a rescale nor a pending scale-down."""
    def settled(snapshot: Snapshot) -> bool:
        autoscaler = snapshot.autoscaler()
        wanted = (autoscaler.get("overrides") or {}).get(slow_id, 1)
        return (snapshot.running() and snapshot.parallelism(SLOW) == wanted
                and snapshot.evaluated_this_deployment()
                and not autoscaler.get("pendingSince"))
    return settled


def exactly_once_problems(values: list[dict[str, Any]], produced: int) -> list[str]:
    """What is wrong with the output of ``produced`` records: every id once, and each key's
    counts 1, 2, ... once each (each record reached the keyed state once)."""
    problems = []
    ids = Counter(v["id"] for v in values)
    if missing := [i for i in range(produced) if i not in ids]:
        problems.append(f"{len(missing)} ids missing, e.g. {missing[:10]}")
    if repeated := sorted(i for i, n in ids.items() if n > 1):
        problems.append(f"{len(repeated)} ids repeated, e.g. {repeated[:10]}")
    if unknown := sorted(i for i in ids if not 0 <= i < produced):
        problems.append(f"{len(unknown)} ids never produced, e.g. {unknown[:10]}")
    counts: dict[int, list[int]] = defaultdict(list)
    for value in values:
        counts[value["k"]].append(value["n"])
    wrong = {k: sorted(n) for k, n in counts.items() if sorted(n) != list(range(1, len(n) + 1))}
    if wrong:
        key = min(wrong)
        problems.append(f"{len(wrong)} keys' counts are not 1..n, e.g. key {key}: "
                        f"{wrong[key][:20]}...")
    return problems


def test_the_autoscaler_scales_a_slow_keyed_vertex_up_and_down_exactly_once(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path,
        kafka_bootstrap: str, record_property: Callable[[str, object], None]) -> None:
    started = time.monotonic()
    source, output = new_topic(kafka_bootstrap, partitions=4), new_topic(kafka_bootstrap, 1)
    kube.kubectl("create", "configmap", "code", "--namespace", namespace,
                 f"--from-literal={FUNCTIONS}.py={FUNCTIONS_SOURCE}")
    operators.start("local", "--local-master", "local[8]")
    kube.apply(manifest(kafka_bootstrap, source, output, driver_tmp / "checkpoints",
                         namespace), namespace=namespace)
    timeline = Timeline(kube, namespace, "scaled")
    steps: dict[str, float] = {}
    passed = False
    try:
        with timeline, RateProducer(kafka_bootstrap, source, 0, KEYS) as producer:
            first = timeline.wait("the job running", Snapshot.running, timeout=180)
            ids = {v["name"]: v["id"] for v in first.status["vertices"]}
            assert set(ids) == {SOURCE, SLOW, SINK}, ids
            slow_id = ids[SLOW]
            settled = _settled(slow_id)
            # The input starts once epochs run (the autoscaler has a sample): on a slow
            # machine the first epochs can take tens of seconds, and a backlog built up
            # meanwhile would rightly be caught up with a scale-up at the base rate.
            timeline.wait("the first metrics", lambda s: bool(s.autoscaler().get("samples")),
                          timeout=180)
            # At the base rate a full window changes nothing.
            producer.rate = BASE_RATE
            timeline.wait("a decision at the base rate", settled, timeout=90)
            assert timeline.decisions() == []

            producer.rate, steps["up"] = BASE_RATE * STEP, time.time()
            timeline.wait("a scale-up decided", lambda s: any(
                d["applied"] for d in s.autoscaler().get("decisions", [])), timeout=120)
            # The input pauses while the rescale redeploys: a restart takes a minute on a
            # loaded machine, and the step's rate meanwhile would be a backlog that the test
            # then waits minutes to drain (the policy's behaviour at a sustained step is the
            # unit tier's, on a simulated job).
            producer.rate = 0
            scaled_up = timeline.wait("the slow vertex scaled up", lambda s: s.running() and (
                s.parallelism(SLOW) or 0) > 1, timeout=180).parallelism(SLOW) or 0

            producer.rate, steps["down"] = BASE_RATE, time.time()
            timeline.wait("the slow vertex scaled down", lambda s: s.running() and (
                s.parallelism(SLOW) or 0) < scaled_up, timeout=120)
            scaled_down = timeline.wait("the slow vertex settled after the step down",
                                        settled, timeout=150).parallelism(SLOW) or 0
            producer.rate = 0
        produced = producer.produced

        def published() -> list[dict[str, Any]] | None:
            values = [json.loads(value) for _, value, _ in read_topic(kafka_bootstrap, output)]
            return values if len(values) >= produced else None

        values = wait_until("every record published", published, timeout=120, interval=2.0)
        assert exactly_once_problems(values, produced) == []

        # Only the slow vertex was ever rescaled: the source and the sink ran as written.
        for snapshot in timeline.snapshots:
            assert snapshot.parallelism(SOURCE) in (None, 1), snapshot.status["vertices"]
            assert snapshot.parallelism(SINK) in (None, 1), snapshot.status["vertices"]
        decisions = timeline.decisions()
        applied = [(seconds(d["time"]), change) for d in decisions for change in d["applied"]]
        assert {change["vertex"] for _, change in applied} == {slow_id}, decisions
        ups = [c for t, c in applied if steps["up"] <= t < steps["down"]]
        downs = [c for t, c in applied if t >= steps["down"]]
        assert ups and all(c["newParallelism"] > c["parallelism"] for c in ups), decisions
        assert downs and all(c["newParallelism"] < c["parallelism"] for c in downs), decisions
        assert 2 <= scaled_up <= 8 and scaled_down < scaled_up, decisions
        assert scaled_down <= 2, decisions
        for _, change in applied:  # each shows what it was decided on
            assert change["reason"].startswith(("scale up", "scale down")), change
            assert change["targetRate"] > 0 and change["trueRate"] > 0, change
            assert 0 < change["busyRatio"] <= 1, change
        expected = {f"ScalingApplied: {SLOW}: {c['parallelism']} -> {c['newParallelism']} "
                    f"({c['reason']})" for _, c in applied}
        said = wait_until("an Event per rescale", lambda: (lambda found: found if set(
            found) >= expected else None)(
            events(kube, namespace, "scaled", "ScalingApplied")), timeout=30)
        assert set(said) == expected, said
        assert events(kube, namespace, "scaled", "ScalingFailed") == []
        passed = True
    finally:  # a continuous job's local driver runs until it is stopped
        kube.kubectl("delete", "dfj", "scaled", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)
        found = figures(timeline, steps, time.monotonic() - started)
        print("\nautoscaler figures:")
        for name, value in found.items():
            print(f"  {name}: {value}" if not isinstance(value, list) else
                  "\n    ".join([f"  {name}:", *map(str, value)]))
            record_property(name, value)
        if not passed:
            print("\n".join(timeline.lines(steps)))
