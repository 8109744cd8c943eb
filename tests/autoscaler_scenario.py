"""The autoscaler's scenario, shared by the k8s tier's test and its benchmark: a continuous
job from Kafka whose keyed vertex costs a fixed time per record, run by an operator of the
local backend, and the job's status second by second (:class:`Timeline`) with the figures
it gives (:func:`figures`)."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kube_helpers import Kube, KubectlError, wait_until
from operator_helpers import job_manifest

#: The slow vertex's cost of a record; a sleep, so that its subtasks do not contend for the
#: machine's two cores (and the driver's local Spark gets a task slot for each, as executors
#: sized by the plan would give them).
COST_MS = 4
#: Records per second before and after the step: 40 % of one subtask's time.
BASE_RATE = 100
#: The step up: 1.6 subtasks' time, so 3 to 4 subtasks for the job's epochs (the source's
#: share of them too) to fill 0.7 of the wall time.
STEP = 4
KEYS = 512
FUNCTIONS = "autoscale_fns"
#: The slow vertex: a per-key count (keyed state) of the records it saw, a record's effect
#: told by its output: the count's value and the record's id.
FUNCTIONS_SOURCE = f'''"""The autoscaler test's slow keyed vertex."""
import time

from dataflow_engine.api.common import Types
from dataflow_engine.api.datastream import KeyedProcessFunction
from dataflow_engine.api.datastream.state import ValueStateDescriptor


class SlowCount(KeyedProcessFunction):
    def open(self, runtime_context):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.LONG()))

    def process_element(self, value, ctx):
        time.sleep({COST_MS / 1000!r})
        seen = (self.seen.value() or 0) + 1
        self.seen.update(seen)
        yield {{"k": value["k"], "id": value["id"], "n": seen}}
'''
#: Epochs of 2 s: an epoch's fixed cost (planning its Spark job, launching its tasks on this
#: machine's two cores) is a smaller share of the job's time than at 0.5 s.
EPOCH = "2s"
#: Short windows, so that a decision takes seconds rather than minutes. A rescale stops the
#: job for 20 to 70 s on this machine: what arrives meanwhile is caught up within 90 s, so
#: the scale-down after the step down is not undone by its own restart's backlog.
AUTOSCALER: dict[str, Any] = {
    "enabled": True, "metricsWindow": "10s", "stabilizationInterval": "6s",
    "scaleDownDelay": "16s", "catchUpDuration": "90s", "restartTime": "45s",
    "maxParallelism": 8,
    # Down to a tenth in one decision (by default to 40 %), to keep the test short.
    "maxScaleDownFactor": 0.9}
#: The JobVertex names of the pipeline's three operators.
SOURCE, SLOW, SINK = "Source: Kafka Source", "KeyedProcess", "Sink: Kafka Sink"


def manifest(bootstrap: str, source: str, output: str, storage: Path,
             transactional_id: str, advisory: bool = False) -> dict[str, Any]:
    """The job; ``advisory``, its autoscaler only recommends (the parallelism as written)."""
    return job_manifest(
        "scaled", parallelism=1, runtimeMode="STREAMING", epochInterval=EPOCH,
        checkpointing={"interval": EPOCH, "storage": str(storage)},
        pyFiles=[{"configMap": "code"}],
        job={"upgradeMode": "savepoint", "autoscaler": {**AUTOSCALER, "advisory": advisory}},
        pipeline=[
            {"name": "events", "type": "kafka",
             "args": {"bootstrapServers": bootstrap, "topics": [source],
                      "valueFormat": "json"}},
            {"name": "slow", "type": "process", "function": f"{FUNCTIONS}:SlowCount",
             "inputs": [{"from": "events", "keyBy": "k"}]},
            {"name": "out", "type": "kafka_sink",
             "inputs": [{"from": "slow", "partitioning": "rebalance"}],
             "args": {"bootstrapServers": bootstrap, "topic": output, "valueFormat": "json",
                      "deliveryGuarantee": "exactly-once",
                      "transactionalIdPrefix": transactional_id}}])


@dataclass
class Snapshot:
    """The job's status at ``time`` (epoch seconds)."""

    time: float
    status: dict[str, Any]

    def vertex(self, name: str) -> dict[str, Any] | None:
        return next((v for v in self.status.get("vertices", []) if v["name"] == name), None)

    def parallelism(self, name: str) -> int | None:
        vertex = self.vertex(name)
        return None if vertex is None else int(vertex["parallelism"])

    def running(self) -> bool:
        """RUNNING, every subtask of every vertex too."""
        vertices = self.status.get("vertices", [])
        return self.status.get("jobStatus") == "RUNNING" and bool(vertices) and all(
            v["states"].get("RUNNING", 0) == v["parallelism"] for v in vertices)

    def autoscaler(self) -> dict[str, Any]:
        return self.status.get("autoscaler") or {}

    def deployed_since(self) -> float:
        since = (self.status.get("deployment") or {}).get("since")
        return seconds(since) if since else float("inf")

    def evaluated_this_deployment(self) -> bool:
        """The autoscaler decided on a full window of this deployment's metrics (whatever it
        decided: a decision that applies empties the window)."""
        autoscaler = self.autoscaler()
        samples = autoscaler.get("samples") or []
        return ("autoscaler" in self.status and autoscaler.get("waiting") is None
                and bool(samples) and samples[0]["time"] >= self.deployed_since())


class Timeline:
    """The job's status every second, in the background, until the ``with`` block ends."""

    def __init__(self, kube: Kube, namespace: str, name: str) -> None:
        self.snapshots: list[Snapshot] = []
        self._stop = threading.Event()

        def watch() -> None:
            while not self._stop.is_set():
                try:  # a failed read is skipped
                    found = kube.get("dataflowjob", name, "--namespace", namespace) or {}
                    self.snapshots.append(Snapshot(time.time(), found.get("status", {})))
                except KubectlError:
                    pass
                self._stop.wait(1.0)

        self._thread = threading.Thread(target=watch, daemon=True)

    def __enter__(self) -> Timeline:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def latest(self) -> Snapshot:
        return self.snapshots[-1] if self.snapshots else Snapshot(0.0, {})

    def wait(self, what: str, condition: Callable[[Snapshot], bool],
             timeout: float) -> Snapshot:
        seen = len(self.snapshots)

        def met() -> Snapshot | None:
            if len(self.snapshots) == seen or not self._thread.is_alive():
                return None  # a new snapshot, or the watcher failed (the test then times out)
            latest = self.latest()
            return latest if condition(latest) else None

        found: Snapshot = wait_until(what, met, timeout, interval=0.5)
        return found

    def decisions(self) -> list[dict[str, Any]]:
        """Every decision the status listed, oldest first."""
        by_time: dict[str, dict[str, Any]] = {}
        for snapshot in self.snapshots:
            for decision in snapshot.autoscaler().get("decisions", []):
                by_time.setdefault(decision["time"], decision)
        return sorted(by_time.values(), key=lambda d: seconds(d["time"]))

    def lines(self, steps: dict[str, float]) -> list[str]:
        """The timeline in short, a line per snapshot that differs from the one before."""
        lines, last = [], ""
        origin = self.snapshots[0].time if self.snapshots else 0.0
        for snapshot in self.snapshots:
            autoscaler = snapshot.autoscaler()
            vertices = " ".join(
                f"{v['name'].split()[-1]}={v['parallelism']}:{v.get('busyRatio', 0):.2f}"
                f"/{v.get('recordsInPerSecond') or 0:.0f}"
                for v in snapshot.status.get("vertices", []))
            line = (f"{snapshot.status.get('jobStatus')} {vertices} backlog="
                    f"{(snapshot.vertex(SOURCE) or {}).get('backlog')} decisions="
                    f"{len(autoscaler.get('decisions', []))} waiting={autoscaler.get('waiting')}")
            if line != last:
                step = max((name for name, at in steps.items() if at <= snapshot.time),
                           key=steps.__getitem__, default="base")
                lines.append(f"{snapshot.time - origin:6.1f} {step:>4} {line}")
            last = line
        return lines

    def rescaled(self, after: float, vertex: str,
                 parallelism: int) -> tuple[float | None, float | None]:
        """When, after ``after``, the job first ran (every subtask) with ``vertex`` at
        ``parallelism``, and when it had first done an epoch so."""
        running = None
        for snapshot in (s for s in self.snapshots if s.time > after):
            if snapshot.running() and snapshot.parallelism(vertex) == parallelism:
                running = running or snapshot.time
                if (snapshot.vertex(vertex) or {}).get("recordsIn"):
                    return running, snapshot.time
            elif running is not None:
                break  # rescaled again before an epoch was done
        return running, None


def seconds(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def figures(timeline: Timeline, steps: dict[str, float], wall: float) -> dict[str, Any]:
    """Each decision after its step: what it changed or set pending and why, and for a change
    the seconds to the job running rescaled and to its first epoch done; the decisions per
    step and the source's peak backlog."""
    up, down = steps.get("up", float("inf")), steps.get("down", float("inf"))
    names = {v["id"]: v["name"] for s in timeline.snapshots for v in s.status.get("vertices", [])}
    decisions, counts = [], Counter[str]()
    for decision in timeline.decisions():
        decided = seconds(decision["time"])
        step, since = ("down", down) if decided >= down else ("up", up) if decided >= up \
            else ("base", timeline.snapshots[0].time)
        counts[f"{'applied' if decision['applied'] else 'pending_only'}_after_{step}"] += 1
        for kind, changes in (("applied", decision["applied"]), ("pending", decision["pending"])):
            for change in changes:
                name, new = names.get(change["vertex"], change["vertex"]), change["newParallelism"]
                line = (f"{step}+{decided - since:.0f}s {kind} {name} {change['parallelism']}->"
                        f"{new} ({change['reason']}; target {change['targetRate']:.0f}/s, true "
                        f"{change.get('trueRate')}/s, busy {change['busyRatio']:.2f})")
                if kind == "applied":
                    running, working = timeline.rescaled(decided, name, new)
                    line += (f": running after {_after(decided, running)}, its first epoch "
                             f"done after {_after(decided, working)}")
                decisions.append(line)
    backlogs = [(s.time, (s.vertex(SOURCE) or {}).get("backlog") or 0)
                for s in timeline.snapshots]
    peak_time, peak = max(backlogs, key=lambda b: b[1], default=(0.0, 0))
    return {**counts, "decisions": decisions,
            "slow_parallelism": [p for p, _ in itertools.groupby(
                s.parallelism(SLOW) for s in timeline.snapshots) if p is not None],
            "backlog_peak": f"{peak} records" + (f" at up+{peak_time - up:.0f}s"
                                                 if peak and "up" in steps else ""),
            "autoscaler_waiting": timeline.latest().autoscaler().get("waiting"),
            "wall_seconds": round(wall)}


def _after(start: float, end: float | None) -> str:
    return "?" if end is None else f"{end - start:.0f} s"
