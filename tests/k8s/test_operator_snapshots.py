"""Snapshots and rollback through the operator on a real API server, local backend: periodic
savepoints kept to their history's count (the others' files disposed of), a user's savepoint
taken, listed, imported, used to start another job and deleted with its files; an upgrade
that fails at start rolled back with the output exact; a suspend that drains."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.runtime.streamoperators.sources import datagen_value
from kube_helpers import Kube, wait_until
from operator_helpers import (
    KEYED_SUM_PIPELINE,
    Operators,
    assert_drained_windows,
    events,
    job,
    job_manifest,
    published_windows,
    status,
    wait_condition,
    wait_job_status,
    window_count_pipeline,
)

pytestmark = pytest.mark.k8s


def _stream(name: str, storage: Path, **job: Any) -> dict[str, Any]:
    """An unbounded datagen job with keyed state, checkpointed to ``storage``."""
    return job_manifest(name, **{
        "parallelism": 2, "epochInterval": "300ms",
        "checkpointing": {"interval": "1s", "storage": str(storage)},
        "job": {"upgradeMode": "savepoint", **job},
        "pipeline": copy.deepcopy(KEYED_SUM_PIPELINE)})


def _snapshot(name: str, job: str, **savepoint: Any) -> dict[str, Any]:
    return {"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowSnapshot",
            "metadata": {"name": name}, "spec": {"jobReference": {"name": job},
                                                 "savepoint": savepoint}}


def _snapshots(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    listed = kube.get("dfsnap", "--namespace", namespace) or {}
    return list(listed.get("items", []))


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_snapshots_periodic_with_retention_taken_imported_restored_and_disposed(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    operators.start(backend="local")
    storage = driver_tmp / "checkpoints"
    savepoints = storage / "savepoints"
    try:
        kube.apply(_stream("stream", storage, savepoint={
            "interval": "2s", "historyMaxCount": 2}), namespace=namespace)
        wait_condition(kube, namespace, "stream", "Running", timeout=180)

        # A user's savepoint: Completed within a checkpoint or two, `kubectl wait` sees it.
        created = time.monotonic()
        kube.apply(_snapshot("mine", "stream"), namespace=namespace)
        kube.kubectl("wait", "--for=condition=Completed", "--timeout=90s",
                     f"--namespace={namespace}", "dfsnap/mine", timeout=100)
        took = time.monotonic() - created
        mine = kube.get("dfsnap", "mine", "--namespace", namespace)
        assert mine is not None
        path = Path(mine["status"]["path"])
        assert mine["status"]["triggerType"] == "user" and (path / "_metadata").is_file()
        assert path.parent == savepoints
        table = kube.kubectl("get", "dfsnap", "--namespace", namespace).stdout
        row = next(line for line in table.splitlines() if line.startswith("mine "))
        assert row.split()[1:4] == ["stream", "user", "COMPLETED"], table

        # Periodic savepoints: at least four taken, at most two kept, the others' files gone.
        def kept() -> list[dict[str, Any]]:
            """The completed periodic savepoints, less those being deleted (their finalizer
            disposes of their files first)."""
            return [s for s in _snapshots(kube, namespace)
                    if s["metadata"].get("labels", {}).get("dataflow.io/snapshot-trigger")
                    == "periodic" and "deletionTimestamp" not in s["metadata"]
                    and s.get("status", {}).get("state") == "COMPLETED"]

        wait_until("four periodic savepoints", lambda: len(
            events(kube, namespace, "stream", "SnapshotTriggered")) >= 4, timeout=120)
        wait_until("the expired ones disposed of", lambda: len(
            events(kube, namespace, "stream", "SavepointDisposed")) >= 2, timeout=60)
        wait_until("at most historyMaxCount kept", lambda: 1 <= len(kept()) <= 2, timeout=30)
        assert all(s["metadata"]["ownerReferences"][0]["name"] == "stream" for s in kept())

        def unlisted() -> set[str]:
            listed = {s.get("status", {}).get("path") for s in _snapshots(kube, namespace)}
            return {str(p) for p in savepoints.glob("savepoint-*")} - listed

        # No savepoint on disk that no snapshot lists (once deletions in flight are done).
        wait_until("only listed savepoints on disk", lambda: not unlisted(), timeout=30)
        disposed = len(events(kube, namespace, "stream", "SavepointDisposed"))
        on_disk = list(savepoints.glob("savepoint-*"))
        history = status(kube, namespace, "stream")["savepoints"]["history"]
        assert len(history) <= 10 and all(h["snapshot"] for h in history)

        # Deleting a user's savepoint disposes of its files through the running driver.
        kube.apply(_snapshot("scratch", "stream"), namespace=namespace)
        kube.kubectl("wait", "--for=condition=Completed", "--timeout=90s",
                     f"--namespace={namespace}", "dfsnap/scratch", timeout=100)
        scratch = Path((kube.get("dfsnap", "scratch", "--namespace", namespace) or {})[
            "status"]["path"])
        size = _size(scratch)
        kube.kubectl("delete", "dfsnap", "scratch", "--namespace", namespace, "--timeout=60s",
                     timeout=90)
        wait_until("the user's savepoint disposed of", lambda: not scratch.exists(), timeout=30)
        assert path.exists()  # "mine" is still there

        # Imported under another name; once the first job is gone (a local driver slot is
        # free), a second job starts from it by reference.
        kube.apply(_snapshot("imported", "copy", alreadyExists=True, path=str(path),
                             disposeOnDelete=False), namespace=namespace)
        kube.kubectl("wait", "--for=condition=Completed", "--timeout=30s",
                     f"--namespace={namespace}", "dfsnap/imported", timeout=40)
        kube.kubectl("delete", "dfj", "stream", "--namespace", namespace, "--timeout=60s",
                     timeout=90)
        kube.apply(_stream("copy", driver_tmp / "copy-checkpoints",
                           initialSavepoint={"snapshotRef": {"name": "imported"}}),
                   namespace=namespace)
        restored = wait_until("the copy restored from the imported savepoint", lambda: (
            (status(kube, namespace, "copy").get("checkpoints") or {}).get("restoredFrom")),
            timeout=180)
        assert restored == str(path)
        assert status(kube, namespace, "copy")["deployment"]["restoreFrom"] == str(path)
        print(f"\nsnapshot Completed after {took:.1f} s; savepoint size {size} bytes; "
              f"{disposed} periodic savepoints disposed of, {len(on_disk)} left on disk")
    finally:  # snapshots are finalized by the operator: delete them while it runs
        kube.kubectl("delete", "dfsnap", "--all", "--namespace", namespace, "--timeout=60s",
                     timeout=90, check=False)
        kube.kubectl("delete", "dfj", "--all", "--namespace", namespace, "--timeout=60s",
                     timeout=90, check=False)


def test_an_upgrade_that_fails_at_start_rolls_back_and_the_output_stays_exact(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    """A bounded continuous job writing files; its upgrade names a function its driver cannot
    import (the operator compiles the topology only, so only the driver finds out): the job
    rolls back to the last stable spec from the upgrade's savepoint, runs to its end, and
    every generated row is in the files once."""
    operators.start(backend="local")
    rows, output = 6000, driver_tmp / "out"
    spec: dict[str, Any] = {
        "parallelism": 2, "epochInterval": "300ms", "runtimeMode": "STREAMING",
        "checkpointing": {"interval": "1s", "storage": str(driver_tmp / "checkpoints")},
        "restartStrategy": {"type": "none"},
        "job": {"upgradeMode": "savepoint", "upgrade": {"rollbackTimeout": "2m"}},
        "pipeline": [
            {"name": "events", "type": "datagen",
             "args": {"rowsPerSecond": 400, "numberOfRows": rows, "seed": 3}},
            {"name": "out", "type": "file", "inputs": ["events"],
             "args": {"path": str(output), "format": "json"}}]}
    try:
        kube.apply(job_manifest("files", **spec), namespace=namespace)
        wait_until("the stable spec recorded", lambda: status(
            kube, namespace, "files").get("lastStableGeneration"), timeout=180)

        broken = copy.deepcopy(spec)
        broken["pipeline"].insert(1, {"name": "broken", "type": "map",
                                      "function": "no_such_module:shout", "inputs": ["events"]})
        broken["pipeline"][2]["inputs"] = ["broken"]
        upgraded_at = time.monotonic()
        kube.apply(job_manifest("files", **broken), namespace=namespace)
        rolled = wait_condition(kube, namespace, "files", "RolledBack", timeout=180)
        took = time.monotonic() - upgraded_at
        assert "generation 2 rolled back to generation 1" in rolled["message"]
        assert "no_such_module" in rolled["message"]
        now = status(kube, namespace, "files")
        assert now["deployedGeneration"] == 1 and now["observedGeneration"] == 2
        assert now["deployment"]["restoreFrom"].startswith(
            str(driver_tmp / "checkpoints" / "savepoints"))
        assert len(events(kube, namespace, "files", "RolledBack")) == 1
        assert job(kube, namespace, "files")["spec"]["pipeline"][1]["name"] == "broken"

        wait_condition(kube, namespace, "files", "Succeeded", timeout=300)
        published = sorted(tuple(json.loads(line)) for part in output.rglob("part-*")
                           for line in part.read_text().splitlines() if line)
        assert published == [(i, datagen_value(3, i)) for i in range(rows)]
        print(f"\nrolled back {took:.1f} s after the failed upgrade was applied")
    finally:
        kube.kubectl("delete", "dfj", "files", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)


def test_a_suspend_with_drain_fires_every_open_window_once(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    """Counts of 1 s event-time windows (a record's index is its event time in ms) written
    to files; suspended with drainOnSuspend, the job fires the window still open at the stop:
    every window is in the files once, the last one partial."""
    operators.start(backend="local")
    output = driver_tmp / "windows"
    spec: dict[str, Any] = {
        "parallelism": 1, "epochInterval": "300ms", "runtimeMode": "STREAMING",
        "checkpointing": {"interval": "1s", "storage": str(driver_tmp / "checkpoints")},
        "job": {"upgradeMode": "savepoint", "drainOnSuspend": True},
        "pipeline": window_count_pipeline(str(output))}

    def windows() -> list[tuple[int, int]]:
        return published_windows("\n".join(part.read_text() for part in output.rglob("part-*")))

    try:
        kube.apply(job_manifest("drained", **spec), namespace=namespace)
        wait_until("a window published", windows, timeout=180)
        kube.kubectl("patch", "dfj", "drained", "--namespace", namespace, "--type=merge",
                     "-p", '{"spec": {"suspend": true}}')
        suspended = wait_job_status(kube, namespace, "drained", "SUSPENDED", timeout=120)
        assert suspended["savepoints"]["last"]["triggerType"] == "suspend"
        assert_drained_windows(windows())
    finally:
        kube.kubectl("delete", "dfsnap,dfj", "--all", "--namespace", namespace,
                     "--timeout=60s", timeout=90, check=False)
