"""Streaming jobs through the operator on a real API server, local backend: savepoints on a
nonce, stateful upgrades and a refused one, an upgrade after the driver died unseen, a savepoint
not taken in time, and jobs that cannot start. Their drivers are local processes, so the tests
need no node (tests/conftest.py runs them in the spark tier's worker)."""

from __future__ import annotations

import copy
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from kube_helpers import Kube, wait_until
from operator_helpers import (
    KEYED_SUM_PIPELINE,
    Operators,
    condition,
    events,
    job,
    job_manifest,
    status,
    wait_condition,
    wait_job_status,
)

pytestmark = pytest.mark.k8s


def _continuous_job(storage: Path, **spec: Any) -> dict[str, Any]:
    """An unbounded datagen job with keyed state (a running sum per key), checkpointed."""
    return job_manifest("stream", **{
        "parallelism": 2, "epochInterval": "300ms",
        "checkpointing": {"interval": "300ms", "storage": str(storage)},
        "job": {"upgradeMode": "savepoint"},
        "pipeline": copy.deepcopy(KEYED_SUM_PIPELINE),
        **spec})


def _wait_for_a_checkpoint(kube: Kube, namespace: str) -> None:
    wait_until("a checkpoint", lambda: ((status(kube, namespace, "stream").get("checkpoints")
                                         or {}).get("lastCompleted")), timeout=120)


def test_savepoints_upgrades_and_a_refused_upgrade_on_the_local_backend(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    first = operators.start(backend="local")
    try:
        storage = driver_tmp / "checkpoints"
        manifest = _continuous_job(storage)
        kube.apply(manifest, namespace=namespace)
        wait_condition(kube, namespace, "stream", "Running", timeout=180)
        _wait_for_a_checkpoint(kube, namespace)

        # A new savepointTriggerNonce takes a savepoint of the running job.
        kube.kubectl("patch", "dfj", "stream", "--namespace", namespace, "--type=merge",
                     "-p", '{"spec": {"job": {"savepointTriggerNonce": 1}}}')
        manual = wait_until("the manual savepoint", lambda: (
            status(kube, namespace, "stream").get("savepoints") or {}).get("last"), timeout=90)
        assert (manual["triggerType"], manual["triggerNonce"]) == ("manual", 1)
        assert Path(manual["path"], "_metadata").is_file()
        assert status(kube, namespace, "stream")["jobStatus"] == "RUNNING"
        assert len(events(kube, namespace, "stream", "SavepointCompleted")) == 1

        # Rescaling the keyed sum is an upgrade through a savepoint: the new run restores it.
        manifest["spec"]["pipeline"][1]["parallelism"] = 3
        kube.apply(manifest, namespace=namespace)

        def upgraded() -> dict[str, Any] | None:
            now = status(kube, namespace, "stream")
            last = (now.get("savepoints") or {}).get("last") or {}
            restored = (now.get("checkpoints") or {}).get("restoredFrom")
            return now if (last.get("triggerType") == "upgrade" and now.get("jobStatus") ==
                           "RUNNING" and restored == last.get("path")) else None

        after = wait_until("the upgrade from a savepoint", upgraded, timeout=180)
        generation = job(kube, namespace, "stream")["metadata"]["generation"]
        assert after["deployedGeneration"] == generation
        assert condition(kube, namespace, "stream", "Upgraded")["status"] == "True"

        # Dropping the keyed sum cannot take its state: refused, and the job runs on as it was.
        dropped = copy.deepcopy(manifest)
        dropped["spec"]["pipeline"] = [dropped["spec"]["pipeline"][0],
                                       {"name": "out", "type": "discard", "inputs": ["events"]}]
        kube.apply(dropped, namespace=namespace)
        refused = wait_condition(kube, namespace, "stream", "Upgraded", "False", timeout=90)
        assert refused["reason"] == "UpgradeRefused"
        assert "'sums'" in refused["message"] and "allow non-restored state" in refused["message"]
        now = status(kube, namespace, "stream")
        assert (now["jobStatus"], now["deployedGeneration"]) == ("RUNNING", generation)
        assert len(events(kube, namespace, "stream", "UpgradeRefused")) == 1

        # A restarted operator reads the running deployment back and keeps observing it.
        def checkpoint_id() -> int:
            checkpoints = status(kube, namespace, "stream").get("checkpoints") or {}
            return int((checkpoints.get("lastCompleted") or {}).get("id", 0))

        first.kill()
        seen = checkpoint_id()
        operators.start(backend="local")
        wait_until("checkpoints observed after the operator restarted",
                   lambda: checkpoint_id() > seen + 3, timeout=90)
        assert len(events(kube, namespace, "stream", "UpgradeRefused")) == 1

        # allowNonRestoredState lets the same change through.
        dropped["spec"]["job"]["allowNonRestoredState"] = True
        kube.apply(dropped, namespace=namespace)
        wait_condition(kube, namespace, "stream", "Upgraded", "True", timeout=180)
        wait_job_status(kube, namespace, "stream", "RUNNING", timeout=120)

        # Suspended with a savepoint, resumed from it.
        kube.kubectl("patch", "dfj", "stream", "--namespace", namespace, "--type=merge",
                     "-p", '{"spec": {"suspend": true}}')
        suspended = wait_job_status(kube, namespace, "stream", "SUSPENDED", timeout=120)
        taken = suspended["savepoints"]["last"]
        assert taken["triggerType"] == "suspend" and Path(taken["path"], "_metadata").is_file()
        kube.kubectl("patch", "dfj", "stream", "--namespace", namespace, "--type=merge",
                     "-p", '{"spec": {"suspend": false}}')
        wait_until("the resume from the suspend savepoint", lambda: (
            (status(kube, namespace, "stream").get("checkpoints") or {}).get("restoredFrom")
            == taken["path"]), timeout=180)
        resumed = status(kube, namespace, "stream")
        assert resumed["deployment"]["restoreFrom"] == taken["path"]

        # A driver that dies is restarted within its deployment: from that deployment's own
        # newest checkpoint, not from the savepoint it began with.
        os.kill(resumed["driver"]["pid"], signal.SIGKILL)
        restarted = wait_until("the restarted driver's restore", lambda: (lambda now: now if (
            now.get("restarts") == 1 and now.get("jobStatus") == "RUNNING"
            and (now.get("checkpoints") or {}).get("restoredFrom", "") != taken["path"])
            else None)(status(kube, namespace, "stream")), timeout=180)
        assert restarted["checkpoints"]["restoredFrom"].startswith(str(storage / "chk-"))
        assert restarted["deployment"]["id"] == resumed["deployment"]["id"]
    finally:  # a continuous job's local driver runs until it is stopped
        kube.kubectl("delete", "dfj", "stream", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)


def test_an_upgrade_after_the_driver_died_unseen_resumes_from_its_newest_checkpoint(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    """The driver dies while no operator runs, so the status still says RUNNING: the next
    operator does not wait for a savepoint the dead driver cannot take, but upgrades from the
    deployment's newest checkpoint, as Flink's operator falls back to the last state."""
    first = operators.start(backend="local")
    storage = driver_tmp / "checkpoints"
    manifest = _continuous_job(storage)
    try:
        kube.apply(manifest, namespace=namespace)
        running = wait_job_status(kube, namespace, "stream", "RUNNING", timeout=180)
        _wait_for_a_checkpoint(kube, namespace)
        first.kill()
        os.kill(running["driver"]["pid"], signal.SIGKILL)
        manifest["spec"]["pipeline"][1]["parallelism"] = 3
        kube.apply(manifest, namespace=namespace)
        generation = job(kube, namespace, "stream")["metadata"]["generation"]
        operators.start(backend="local")

        def upgraded() -> dict[str, Any] | None:
            now = status(kube, namespace, "stream")
            restored = (now.get("checkpoints") or {}).get("restoredFrom") or ""
            return now if (now.get("deployedGeneration") == generation and now.get(
                "jobStatus") == "RUNNING" and restored.startswith(str(storage / "chk-"))) else None

        after = wait_until("the upgrade from the newest checkpoint", upgraded, timeout=180)
        assert after["deployment"]["id"] == running["deployment"]["id"]  # its lineage goes on
        assert after["deployment"]["generation"] == generation
        assert events(kube, namespace, "stream", "SavepointFailed") == []
        assert condition(kube, namespace, "stream", "Upgraded")["status"] == "True"
    finally:
        kube.kubectl("delete", "dfj", "stream", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)


def test_a_savepoint_the_driver_does_not_take_in_time_fails_and_the_next_nonce_is_taken(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    """A function stalls one epoch beyond --savepoint-timeout (until the savepoint failed), so
    the driver cannot reach the epoch boundary a savepoint is taken at: the nonce's savepoint
    fails once, naming the timeout, the job runs on, and the next nonce is taken (the late one
    is never recorded)."""
    stall, release, stalled = driver_tmp / "stall", driver_tmp / "release", driver_tmp / "stalled"
    source = STALL_SOURCE.format(stall=str(stall), release=str(release), stalled=str(stalled))
    kube.kubectl("create", "configmap", "code", "--namespace", namespace,
                 f"--from-literal=stalls.py={source}")
    operators.start("local", "--savepoint-timeout", "6")
    manifest = _continuous_job(driver_tmp / "checkpoints", pyFiles=[{"configMap": "code"}])
    manifest["spec"]["pipeline"].insert(1, {"name": "stalled", "type": "map",
                                            "function": "stalls:once", "inputs": ["events"]})
    manifest["spec"]["pipeline"][2]["inputs"][0]["from"] = "stalled"

    def savepoints() -> dict[str, Any]:
        return status(kube, namespace, "stream").get("savepoints") or {}

    def nonce(value: int) -> None:
        kube.kubectl("patch", "dfj", "stream", "--namespace", namespace, "--type=merge", "-p",
                     json.dumps({"spec": {"job": {"savepointTriggerNonce": value}}}))

    try:
        kube.apply(manifest, namespace=namespace)
        wait_job_status(kube, namespace, "stream", "RUNNING", timeout=180)
        _wait_for_a_checkpoint(kube, namespace)
        stall.touch()
        wait_until("the stalled epoch", lambda: not stall.exists(), timeout=60)
        nonce(1)
        failed = wait_until("the savepoint's failure", lambda: (lambda now: now if (
            now.get("lastTriggerNonce") == 1 and not now.get("pending")) else None)(
            savepoints()), timeout=60)
        assert failed["lastError"] == "not reported within 6 s", failed
        assert "last" not in failed and not stalled.exists()  # it failed while stalled
        assert len(events(kube, namespace, "stream", "SavepointFailed")) == 1
        assert status(kube, namespace, "stream")["jobStatus"] == "RUNNING"

        release.touch()
        wait_until("the stall's end", stalled.exists, timeout=60)
        nonce(2)
        taken = wait_until("the next nonce's savepoint", lambda: savepoints().get("last"),
                           timeout=60)
        assert (taken["triggerType"], taken["triggerNonce"]) == ("manual", 2)
        assert Path(taken["path"], "_metadata").is_file()
        time.sleep(3)  # the driver took the first request late: it is not recorded
        after = savepoints()
        assert [entry["triggerNonce"] for entry in after["history"]] == [2]
        assert "lastError" not in after and after["lastTriggerNonce"] == 2
        assert len(events(kube, namespace, "stream", "SavepointCompleted")) == 1
        assert len(events(kube, namespace, "stream", "SavepointFailed")) == 1
    finally:
        kube.kubectl("delete", "dfj", "stream", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)


#: A map that, once, holds its record until the test leaves ``release`` (at most 120 s): the
#: first subtask to see ``stall`` removes it and waits, then leaves ``stalled``.
STALL_SOURCE = """import os, pathlib, time

def once(row):
    try:
        os.remove({stall!r})
    except FileNotFoundError:
        return row
    deadline = time.monotonic() + 120
    while not os.path.exists({release!r}) and time.monotonic() < deadline:
        time.sleep(0.1)
    pathlib.Path({stalled!r}).touch()
    return row
"""


def test_streaming_jobs_that_cannot_start_fail_naming_the_cause_and_are_left_alone(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    """A savepoint path that does not exist and brokers nobody serves: the driver fails, is
    restarted as its strategy says, and then the job is Failed with the cause in its condition,
    once; the operator does not loop on it, and the next job runs."""
    operators.start(backend="local")
    missing = driver_tmp / "no-such-savepoint"
    kube.apply(_continuous_job(
        driver_tmp / "checkpoints", job={"upgradeMode": "savepoint",
                                       "initialSavepointPath": str(missing)},
        restartStrategy={"type": "fixed-delay", "attempts": 1, "delay": "1s"}),
        namespace=namespace)
    failed = wait_condition(kube, namespace, "stream", "Failed", timeout=240)
    assert f"{missing} does not exist" in failed["message"], failed
    assert "1 restarts used" in failed["message"], failed
    assert status(kube, namespace, "stream")["restarts"] == 1
    assert len(events(kube, namespace, "stream", "Restarting")) == 1

    kube.apply(job_manifest("unreachable", runtimeMode="STREAMING",
                            restartStrategy={"type": "none"}, pipeline=[
        {"name": "clicks", "type": "kafka",
         "args": {"bootstrapServers": "127.0.0.1:9", "topics": ["clicks"],
                  "properties": {"socket.timeout.ms": "2000"}}},
        {"name": "out", "type": "discard", "inputs": ["clicks"]}]), namespace=namespace)
    unreachable = wait_condition(kube, namespace, "unreachable", "Failed", timeout=180)
    assert "the brokers cannot be reached (bootstrapServers 127.0.0.1:9)" in (
        unreachable["message"]), unreachable

    versions = {name: job(kube, namespace, name)["metadata"]["resourceVersion"]
                for name in ("stream", "unreachable")}
    kube.apply(job_manifest("good"), namespace=namespace)
    wait_condition(kube, namespace, "good", "Succeeded", timeout=240)
    for name, version in versions.items():
        assert job(kube, namespace, name)["metadata"]["resourceVersion"] == version
        assert len(events(kube, namespace, name, "Failed")) == 1
