"""The operator's local backend on a real API server: drivers as local processes on embedded
Spark (no node needed), their user code, deletion, a run that ended while the operator was down,
and the bound on drivers running at once."""

from __future__ import annotations

import ast
import os
import time
from pathlib import Path

import pytest

from kube_helpers import REPO_ROOT, Kube, wait_until
from operator_helpers import (
    Operators,
    events,
    job,
    job_manifest,
    status,
    wait_condition,
    wait_job_status,
)
from user_code import (
    EXPECTED,
    HELPERS_MODULE,
    HELPERS_SOURCE,
    user_code_pipeline,
    write_probe_wheel,
)

pytestmark = pytest.mark.k8s


def test_wordcount_on_the_local_backend_succeeds_with_every_subtask_finished(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start(backend="local")
    kube.kubectl("apply", "--namespace", namespace, "-f", str(REPO_ROOT / "examples" /
                                                              "wordcount.yaml"))
    kube.kubectl("wait", "--for=condition=Succeeded", "dfj/wordcount", "--namespace", namespace,
                 "--timeout=240s", timeout=260)
    final = status(kube, namespace, "wordcount")
    assert final["jobStatus"] == "FINISHED"
    assert [v["states"] for v in final["vertices"]] == [
        {"FINISHED": 1}, {"FINISHED": 2}, {"FINISHED": 2}]
    assert [v["subtasks"] for v in final["vertices"]] == ["F", "FF", "FF"]
    assert final["vertices"][1]["recordsIn"] == 9
    log = operators.state_dir / namespace / "wordcount" / "driver.log"
    printed = sorted(line for line in log.read_text().splitlines()
                     if line[:1].isdigit() and "> (" in line)
    counts = dict(ast.literal_eval(line.split("> ", 1)[1]) for line in printed)
    assert counts == {"to": 11, "the": 5, "and": 4, "be": 3, "a": 3, "sleep": 3, "die": 2,
                      "tis": 2, "or": 2, "of": 2, "by": 2, "end": 2, "that": 2, "is": 2}
    assert {line.split(">")[0] for line in printed} <= {"1", "2"}
    assert len(events(kube, namespace, "wordcount", "Finished")) == 1
    assert final["driver"]["logs"] == str(log)

    # A time to live set after the end cleans the run up, without running the job again.
    kube.kubectl("patch", "dfj", "wordcount", "--namespace", namespace, "--type=merge",
                 "-p", '{"spec": {"ttlSecondsAfterFinished": 0}}')
    wait_until("the ended run's files removed", lambda: not log.parent.exists(), timeout=30)
    wait_until("status.driver removed", lambda: "driver" not in status(kube, namespace,
                                                                        "wordcount"))
    assert status(kube, namespace, "wordcount")["jobStatus"] == "FINISHED"
    assert len(events(kube, namespace, "wordcount", "CleanedUp")) == 1
    assert len(events(kube, namespace, "wordcount", "Submitted")) == 1


def test_user_code_from_a_config_map_and_requirements_on_the_local_backend(
        kube: Kube, namespace: str, operators: Operators, driver_tmp: Path) -> None:
    wheel = write_probe_wheel(driver_tmp / "wheels")
    kube.kubectl("create", "configmap", "code", "--namespace", namespace,
                 f"--from-literal={HELPERS_MODULE}.py={HELPERS_SOURCE}")
    operators.start(backend="local")
    kube.apply(job_manifest("shipped", parallelism=2, pipeline=user_code_pipeline(),
                            pyFiles=[{"configMap": "code"}], requirements=[str(wheel)]),
               namespace=namespace)
    wait_condition(kube, namespace, "shipped", "Succeeded", timeout=240)
    log = Path(status(kube, namespace, "shipped")["driver"]["logs"]).read_text()
    assert sorted(line.split("> ", 1)[1] for line in log.splitlines()
                  if line[:1].isdigit() and "> " in line) == EXPECTED, log[-3000:]
    # A missing ConfigMap fails the job with the field named, and nothing else.
    kube.apply(job_manifest("missing", pipeline=user_code_pipeline(),
                            pyFiles=[{"configMap": "nowhere"}]), namespace=namespace)
    failed = wait_condition(kube, namespace, "missing", "Failed", timeout=60)
    assert "spec.pyFiles[0].configMap" in failed["message"], failed


def test_deleting_a_running_local_job_stops_its_driver_process(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start(backend="local")
    long_job = job_manifest("long", pipeline=[
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 200_000_000}},
        {"name": "square", "type": "map", "function": "square", "inputs": ["source"]},
        {"name": "out", "type": "discard", "inputs": ["square"]}])
    kube.apply(long_job, namespace=namespace)
    running = wait_job_status(kube, namespace, "long", "RUNNING", timeout=120)
    pid = running["driver"]["pid"]
    assert os.path.exists(f"/proc/{pid}")
    # The local backend needs a finalizer: garbage collection cannot stop a process.
    assert job(kube, namespace, "long")["metadata"]["finalizers"]
    assert status(kube, namespace, "long")["jobStatus"] == "RUNNING" and _alive(pid)
    directory = operators.state_dir / namespace / "long"
    assert directory.is_dir()
    kube.kubectl("delete", "dfj", "long", "--namespace", namespace, "--timeout=60s",
                 timeout=90)
    wait_until("the driver process to exit", lambda: not _alive(pid), timeout=30)
    # The job's files go with it.
    assert not directory.exists()


def test_a_local_run_that_ended_while_the_operator_was_down_is_not_run_again(
        kube: Kube, namespace: str, operators: Operators) -> None:
    first = operators.start(backend="local")
    job_ = job_manifest("once", pipeline=[
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 3_000_000}},
        {"name": "square", "type": "map", "function": "square", "inputs": ["source"]},
        {"name": "out", "type": "discard", "inputs": ["square"]}])
    kube.apply(job_, namespace=namespace)
    pid = wait_job_status(kube, namespace, "once", "RUNNING", timeout=120)["driver"]["pid"]
    first.kill()  # SIGKILL: no chance to record anything; the driver runs on
    wait_until("the driver to finish on its own", lambda: not _alive(pid), timeout=180)
    log = operators.state_dir / namespace / "once" / "driver.log"
    written = log.read_bytes()
    operators.start(backend="local")
    final = wait_job_status(kube, namespace, "once", "FINISHED", timeout=60)
    assert final["driver"]["pid"] == pid and final["restarts"] == 0
    time.sleep(2)  # a second driver, had one started, would be writing to the log by now
    assert log.read_bytes() == written


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_local_jobs_beyond_the_driver_limit_are_queued_then_run(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start("local", "--max-local-drivers", "1")
    long_job = job_manifest("first", pipeline=[
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 200_000_000}},
        {"name": "square", "type": "map", "function": "square", "inputs": ["source"]},
        {"name": "out", "type": "discard", "inputs": ["square"]}])
    kube.apply(long_job, namespace=namespace)
    wait_job_status(kube, namespace, "first", "RUNNING", timeout=120)
    kube.apply(job_manifest("second"), namespace=namespace)
    queued = wait_condition(kube, namespace, "second", "Provisioned", "False")
    assert queued["reason"] == "Queued" and "1 of 1 local drivers" in queued["message"]
    assert status(kube, namespace, "second")["jobStatus"] == "CREATED"
    assert len(events(kube, namespace, "second", "Queued")) == 1
    kube.kubectl("delete", "dfj", "first", "--namespace", namespace, "--timeout=60s",
                 timeout=90)
    wait_condition(kube, namespace, "second", "Succeeded", timeout=120)
    assert [e.split(":")[0] for e in events(kube, namespace, "second", "Submitted")] == [
        "Submitted"]
