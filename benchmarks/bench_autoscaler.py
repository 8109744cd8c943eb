"""Autoscaler benchmark (on demand): ``python benchmarks/bench_autoscaler.py [--out PNG]``.

Needs the bench extra (``pip install -c constraints.txt -e '.[bench]'``: matplotlib).

Starts its own control plane (hack/cluster, no node), a broker of hack/kafka and an operator
of the local backend, and runs the k8s tier's scenario (tests/autoscaler_scenario.py): a
Kafka job whose keyed vertex costs 4 ms a record, fed 100 records/s, then four times that,
then 100 again, on a fixed schedule. Twice, in the same run:

1. the autoscaler on, which scales the slow vertex as the load steps up and down;
2. the baseline, the same job with the autoscaler advisory (it recommends, the job keeps the
   parallelism written, 1).

Prints each run's decisions (what changed and why, the seconds from each decision to the
job running rescaled and to its first epoch done), its backlog peak and the seconds it was
behind (its backlog over two seconds of input), with the autoscaled run's figures as ratios
to the baseline's; draws input rate, backlog and the slow vertex's parallelism over time, both runs,
as a PNG.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "engine"), str(REPO / "operator"), str(REPO / "tests")]

from autoscaler_scenario import (  # noqa: E402
    BASE_RATE,
    FUNCTIONS,
    FUNCTIONS_SOURCE,
    KEYS,
    SLOW,
    SOURCE,
    STEP,
    Timeline,
    figures,
    manifest,
)
from kafka_helpers import RateProducer, kafka_broker, new_topic  # noqa: E402
from kube_helpers import Kube  # noqa: E402
from operator_helpers import Operators, driver_reachable_directory  # noqa: E402
from planes import session_plane  # noqa: E402

#: Seconds at each rate: the base, the step up, the base again.
SCHEDULE = ((BASE_RATE, 40.0), (BASE_RATE * STEP, 150.0), (BASE_RATE, 110.0))
CRDS = REPO / "crds"


@dataclass
class Run:
    """One run's timeline, the producer's rate over time and when each step came."""

    name: str
    timeline: Timeline
    rates: list[tuple[float, float]]
    steps: dict[str, float]

    def backlog(self) -> list[tuple[float, float]]:
        return [(s.time, float((s.vertex(SOURCE) or {}).get("backlog") or 0))
                for s in self.timeline.snapshots]

    def seconds_behind(self) -> float:
        """Seconds from the step up on during which the backlog was over two seconds of the
        stepped-up input."""
        behind, last = 0.0, None
        for at, backlog in self.backlog():
            if last is not None and at >= self.steps["up"] and backlog > 2 * BASE_RATE * STEP:
                behind += at - last
            last = at
        return behind


def run(kube: Kube, namespace: str, bootstrap: str, advisory: bool) -> Run:
    """The scenario once in ``namespace``: the job, its load on the schedule, its timeline."""
    kube.kubectl("create", "namespace", namespace)
    kube.kubectl("create", "configmap", "code", "--namespace", namespace,
                 f"--from-literal={FUNCTIONS}.py={FUNCTIONS_SOURCE}")
    source, output = new_topic(bootstrap, partitions=4), new_topic(bootstrap, 1)
    storage = driver_reachable_directory()
    operators = Operators(kube, namespace, Path(tempfile.mkdtemp(prefix="bench-autoscaler-")))
    operators.start("local", "--local-master", "local[8]")
    timeline = Timeline(kube, namespace, "scaled")
    rates: list[tuple[float, float]] = []
    steps: dict[str, float] = {}
    try:
        kube.apply(manifest(bootstrap, source, output, storage / "checkpoints", namespace,
                            advisory=advisory), namespace=namespace)
        with timeline, RateProducer(bootstrap, source, 0, KEYS) as producer:
            timeline.wait("the job running", lambda s: s.running(), timeout=180)
            for (rate, seconds), step in zip(SCHEDULE, ("base", "up", "down"), strict=True):
                producer.rate, steps[step] = rate, time.time()
                rates.append((steps[step], rate))
                time.sleep(seconds)
            rates.append((time.time(), rate))
    finally:
        kube.kubectl("delete", "dfj", "scaled", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)
        operators.stop_all()
        kube.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        shutil.rmtree(storage, ignore_errors=True)
    return Run("autoscaled" if not advisory else "baseline (parallelism as written)",
               timeline, rates, steps)


def report(autoscaled: Run, baseline: Run) -> None:
    for each in (autoscaled, baseline):
        found = figures(each.timeline, each.steps, 0.0)
        print(f"\n{each.name}:" + (" (advisory: recommended, not applied)"
                                    if each is baseline else ""))
        for line in found["decisions"]:
            print(f"  {line}")
        print(f"  slow vertex parallelism: {found['slow_parallelism']}")
        print(f"  backlog peak: {found['backlog_peak']}")
        print(f"  seconds behind (backlog over 2 s of input) from the step up: "
              f"{each.seconds_behind():.0f}")
    peak = max(b for _, b in autoscaled.backlog())
    base_peak = max(b for _, b in baseline.backlog())
    print(f"\nbacklog peak, autoscaled / baseline: {peak:.0f} / {base_peak:.0f} = "
          f"{peak / base_peak if base_peak else float('nan'):.2f}")
    behind, base_behind = autoscaled.seconds_behind(), baseline.seconds_behind()
    print(f"seconds behind, autoscaled / baseline: {behind:.0f} / {base_behind:.0f} = "
          f"{behind / base_behind if base_behind else float('nan'):.2f}")


def draw(autoscaled: Run, baseline: Run, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (rate_axis, backlog_axis, parallelism_axis) = plt.subplots(
        3, 1, sharex=True, figsize=(10, 8))
    for each, style in ((autoscaled, "-"), (baseline, "--")):
        origin = each.steps["base"]
        times = [t - origin for t, _ in each.rates]
        rate_axis.step(times, [r for _, r in each.rates], style, where="post",
                       label=each.name)
        backlog = each.backlog()
        backlog_axis.plot([t - origin for t, _ in backlog], [b for _, b in backlog], style,
                          label=each.name)
        snapshots = [s for s in each.timeline.snapshots if s.parallelism(SLOW) is not None]
        parallelism_axis.step([s.time - origin for s in snapshots],
                              [s.parallelism(SLOW) for s in snapshots], style, where="post",
                              label=f"{SLOW}, {each.name}")
        source = [s for s in each.timeline.snapshots if s.parallelism(SOURCE) is not None]
        parallelism_axis.step([s.time - origin for s in source],
                              [s.parallelism(SOURCE) for s in source], style, where="post",
                              alpha=0.4, label=f"{SOURCE}, {each.name}")
    rate_axis.set_ylabel("input (records/s)")
    backlog_axis.set_ylabel("backlog (records)")
    parallelism_axis.set_ylabel("parallelism")
    parallelism_axis.set_xlabel("seconds since the load started")
    for axis in (rate_axis, backlog_axis, parallelism_axis):
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small")
    figure.suptitle("The autoscaler under a fourfold step of a Kafka job's input")
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    print(f"\nwrote {out}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("autoscaler.png"))
    args = parser.parse_args(argv)
    runs: dict[bool, Run] = {}
    with session_plane(real_node=False) as plane, kafka_broker() as bootstrap:
        kube = plane.kube
        kube.kubectl("apply", "-f", str(CRDS))
        kube.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                     "crd/dataflowjobs.dataflow.io", "crd/dataflowsnapshots.dataflow.io")
        for advisory in (False, True):
            runs[advisory] = run(kube, f"bench-autoscaler-{int(advisory)}", bootstrap,
                                 advisory)
    report(runs[False], runs[True])
    draw(runs[False], runs[True], args.out)


if __name__ == "__main__":
    main()
