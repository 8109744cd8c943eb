"""The operator on a real API server: provisioning, status, lifecycle, failures, scale."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from dataflow_engine.spec.catalog import CATALOG
from kube_helpers import Kube, free_port, wait_until
from operator_helpers import (
    Operators,
    condition,
    events,
    healthz,
    job,
    job_manifest,
    owned,
    status,
    wait_condition,
    wait_job_status,
)

pytestmark = pytest.mark.k8s
OWNED_KINDS = ("pods", "services", "configmaps", "serviceaccounts", "roles", "rolebindings")


def _object_names(kube: Kube, namespace: str, name: str) -> dict[str, list[str]]:
    """The objects the operator made for a job: owned by its DataflowJob (on a real node a
    running driver adds executor pods of the job, owned by the driver pod)."""
    return {kind: sorted(o["metadata"]["name"] for o in owned(kube, namespace, kind, name)
                         if any(ref.get("kind") == "DataflowJob"
                                for ref in o["metadata"].get("ownerReferences", [])))
            for kind in OWNED_KINDS}


def test_kubernetes_backend_creates_the_expected_objects_under_restricted(
        kube: Kube, namespace: str, operators: Operators) -> None:
    kube.kubectl("label", "namespace", namespace,
                 "pod-security.kubernetes.io/enforce=restricted")
    operators.start()
    kube.apply(job_manifest("wc"), namespace=namespace)
    wait_condition(kube, namespace, "wc", "Provisioned")
    assert _object_names(kube, namespace, "wc") == {
        "pods": ["wc-driver"], "services": ["wc-driver"], "configmaps": ["wc-plan"],
        "serviceaccounts": ["dataflow-driver-wc", "dataflow-executor-wc"],
        "roles": ["dataflow-driver-wc"], "rolebindings": ["dataflow-driver-wc"]}
    uid = job(kube, namespace, "wc")["metadata"]["uid"]
    for kind in OWNED_KINDS:
        for obj in owned(kube, namespace, kind, "wc"):
            refs = obj["metadata"]["ownerReferences"]
            assert [(r["kind"], r["uid"]) for r in refs] == [("DataflowJob", uid)], kind
    driver = owned(kube, namespace, "pods", "wc")[0]
    assert driver["metadata"]["labels"]["dataflow.io/role"] == "driver"
    wait_job_status(kube, namespace, "wc", "RUNNING")
    plan = status(kube, namespace, "wc")["plan"]
    assert [v["name"] for v in plan["jobVertices"]] == ["Source: Sequence Source",
                                                        "Map -> Sink: Discarding Sink"]
    table = kube.kubectl("get", "dfj", "wc", "--namespace", namespace).stdout
    assert "RUNNING" in table and "0/3" in table
    assert [e.split(":")[0] for e in events(kube, namespace, "wc", "Submitted")] == [
        "Submitted"]


def test_driver_role_is_enough_for_spark_and_no_more(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    kube.apply(job_manifest("wc"), namespace=namespace)
    wait_condition(kube, namespace, "wc", "Provisioned")
    account = f"system:serviceaccount:{namespace}:dataflow-driver-wc"

    def can(verb: str, resource: str, where: str, subresource: str | None = None) -> bool:
        return kube.can_i(verb, resource, account=account, namespace=where,
                          subresource=subresource)

    for verb in ("create", "get", "list", "watch", "delete", "deletecollection"):
        assert can(verb, "pods", namespace), verb
    assert not can("create", "configmaps", namespace)
    assert not can("create", "pods", "default")
    assert not can("get", "secrets", namespace)
    assert not can("create", "pods", namespace, subresource="exec")
    assert not can("get", "pods", "default", subresource="log")
    assert not can("create", "services", namespace)
    assert not can("create", "roles", namespace)
    assert not can("patch", "dataflowjobs", namespace)


@pytest.mark.parametrize(("change", "field"), [
    ({"parallelism": 0}, "spec.parallelism"),
    ({"parallelism": 300}, "spec.parallelism"),
    ({"runtimeMode": "SOMETIMES"}, "spec.runtimeMode"),
    ({"pipeline": [{"name": "a", "type": "sequence", "args": {"from": 1, "to": 2}},
                   {"name": "a", "type": "print", "inputs": ["a"]}]}, "spec.pipeline[1]"),
])
def test_schema_invalid_manifests_are_rejected_by_the_api_server(
        kube: Kube, namespace: str, crd: None, change: dict[str, object], field: str) -> None:
    manifest = json.dumps(job_manifest("bad", **change))
    result = kube.kubectl("apply", "--namespace", namespace, "-f", "-", input=manifest,
                          check=False)
    assert result.returncode != 0
    assert field in result.stderr, result.stderr
    assert kube.get("dataflowjob", "bad", "--namespace", namespace) is None


SINK_ARGS: dict[str, dict[str, object]] = {
    "file": {"path": "/tmp/out"}, "kafka_sink": {"bootstrapServers": "kafka:9092", "topic": "t"}}


@pytest.mark.parametrize("sink", [str(kind.operator_type) for kind in CATALOG.values()
                                  if kind.is_sink])
def test_the_api_server_admits_every_sink_type_and_refuses_a_pipeline_without_one(
        kube: Kube, namespace: str, crd: None, sink: str) -> None:
    """The CRD's rule that a pipeline has a sink knows every sink the engine runs."""
    source = {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": 2}}
    out = {"name": "out", "type": sink, "inputs": ["numbers"], "args": SINK_ARGS.get(sink, {})}

    def dry_run(pipeline: list[dict[str, object]]) -> subprocess.CompletedProcess[str]:
        manifest = json.dumps(job_manifest(f"sink-{sink.replace('_', '-')}", pipeline=pipeline))
        return kube.kubectl("apply", "--dry-run=server", "--namespace", namespace, "-f", "-",
                            input=manifest, check=False)

    admitted = dry_run([source, out])
    assert admitted.returncode == 0, admitted.stderr
    refused = dry_run([source, {"name": "squares", "type": "map", "function": "square",
                                "inputs": ["numbers"]}])
    assert refused.returncode != 0
    assert "the pipeline needs a sink" in refused.stderr, refused.stderr


def test_semantically_invalid_job_fails_once_without_retries(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    bad = job_manifest("bad")
    bad["spec"]["pipeline"][1]["inputs"] = ["nope"]
    kube.apply(bad, namespace=namespace)
    failed = wait_condition(kube, namespace, "bad", "Failed")
    assert "spec.pipeline[1].inputs[0].from" in failed["message"]
    assert "unknown input 'nope'" in failed["message"]
    assert status(kube, namespace, "bad")["jobStatus"] == "FAILED"

    def settled() -> str | None:
        """Its resourceVersion, once nothing wrote for 4 s (kopf's own annotation may still
        follow the Failed status; a retry loop never settles)."""
        before = job(kube, namespace, "bad")["metadata"]["resourceVersion"]
        time.sleep(4)
        after = job(kube, namespace, "bad")["metadata"]["resourceVersion"]
        return str(after) if after == before else None

    version = wait_until("the failed job to be left alone (no retries)", settled, timeout=20)
    assert len(events(kube, namespace, "bad", "Failed")) == 1
    assert owned(kube, namespace, "pods", "bad") == []
    # An operator restart reports nothing new: the same generation already failed.
    operators.stop_all()
    restarted = operators.start()
    wait_until("the restarted operator to resume the job",
               lambda: "Handler 'build_registry.<locals>.spec_changed' succeeded"
               in restarted.log.read_text(errors="replace"), timeout=60)
    time.sleep(2)
    assert len(events(kube, namespace, "bad", "Failed")) == 1
    assert job(kube, namespace, "bad")["metadata"]["resourceVersion"] == version
    # Other jobs are not affected.
    kube.apply(job_manifest("good"), namespace=namespace)
    wait_condition(kube, namespace, "good", "Provisioned")


def test_parallelism_change_redeploys_and_bad_update_keeps_the_last_good(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    kube.apply(job_manifest("wc"), namespace=namespace)
    wait_job_status(kube, namespace, "wc", "RUNNING")
    first = owned(kube, namespace, "pods", "wc")[0]
    first_hash = status(kube, namespace, "wc")["plan"]["hash"]

    kube.kubectl("patch", "dfj", "wc", "--namespace", namespace, "--type=merge",
                 "-p", json.dumps({"spec": {"parallelism": 3}}))
    wait_until("a new plan", lambda: status(kube, namespace, "wc")["plan"]["hash"] != first_hash)
    wait_until("the redeployed driver", lambda: [
        p for p in owned(kube, namespace, "pods", "wc")
        if p["metadata"]["uid"] != first["metadata"]["uid"]])
    current = status(kube, namespace, "wc")
    assert current["plan"]["numExecutionVertices"] == 4
    assert current["deployedGeneration"] == 2
    assert events(kube, namespace, "wc", "SpecChanged")
    wait_job_status(kube, namespace, "wc", "RUNNING")
    second = owned(kube, namespace, "pods", "wc")[0]

    kube.kubectl("patch", "dfj", "wc", "--namespace", namespace, "--type=merge",
                 "-p", json.dumps({"spec": {"pipeline": [
                     *job_manifest("x")["spec"]["pipeline"][:1],
                     {"name": "square", "type": "map", "function": "not a function",
                      "inputs": ["source"]},
                     {"name": "out", "type": "discard", "inputs": ["square"]}]}}))
    compiled = wait_condition(kube, namespace, "wc", "Compiled", "False")
    assert "spec.pipeline[1].function" in compiled["message"]
    current = status(kube, namespace, "wc")
    assert current["jobStatus"] == "RUNNING"
    assert current["observedGeneration"] == 3 and current["deployedGeneration"] == 2
    assert owned(kube, namespace, "pods", "wc")[0]["metadata"]["uid"] == second["metadata"]["uid"]


def test_suspend_and_resume(kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    kube.apply(job_manifest("wc"), namespace=namespace)
    wait_job_status(kube, namespace, "wc", "RUNNING")
    kube.kubectl("patch", "dfj", "wc", "--namespace", namespace, "--type=merge",
                 "-p", '{"spec": {"suspend": true}}')
    wait_job_status(kube, namespace, "wc", "SUSPENDED")
    wait_until("the driver to stop", lambda: owned(kube, namespace, "pods", "wc") == [])
    assert owned(kube, namespace, "configmaps", "wc") != []
    kube.kubectl("patch", "dfj", "wc", "--namespace", namespace, "--type=merge",
                 "-p", '{"spec": {"suspend": false}}')
    wait_job_status(kube, namespace, "wc", "RUNNING")
    assert len(owned(kube, namespace, "pods", "wc")) == 1
    assert events(kube, namespace, "wc", "Suspended") and events(kube, namespace, "wc",
                                                                  "Resumed")


def test_delete_leaves_nothing(kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    kube.apply(job_manifest("wc"), namespace=namespace)
    wait_condition(kube, namespace, "wc", "Provisioned")
    assert job(kube, namespace, "wc")["metadata"].get("finalizers") in (None, [])
    kube.kubectl("delete", "dfj", "wc", "--namespace", namespace, "--timeout=30s")
    wait_until("garbage collection", lambda: all(
        not names for names in _object_names(kube, namespace, "wc").values()), timeout=60)


def test_operator_killed_mid_provisioning_converges_without_duplicates(
        kube: Kube, namespace: str, operators: Operators) -> None:
    names = [f"job-{i}" for i in range(12)]
    kube.apply(*(job_manifest(n) for n in names), namespace=namespace)
    first = operators.start()
    wait_until("some provisioning", lambda: owned(kube, namespace, "configmaps", "job-0")
               or any(owned(kube, namespace, "configmaps", n) for n in names), timeout=60,
               interval=0.05)
    first.kill()
    operators.start()
    for name in names:
        wait_condition(kube, namespace, name, "Provisioned", timeout=90)
    pods = kube.get("pods", "--namespace", namespace)
    drivers = sorted(p["metadata"]["name"] for p in (pods or {}).get("items", []))
    assert drivers == sorted(f"{n}-driver" for n in names)
    for name in names:
        counts = {kind: len(v) for kind, v in _object_names(kube, namespace, name).items()}
        assert counts == {**dict.fromkeys(OWNED_KINDS, 1), "serviceaccounts": 2}, name
        assert len(events(kube, namespace, name, "Submitted")) >= 1


def test_an_unschedulable_driver_shows_the_schedulers_reason(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    kube.apply(job_manifest("huge", driver={"cpu": "512", "memory": "1Gi"}), namespace=namespace)
    running = wait_until("the scheduler's verdict in Running", lambda: (
        (c := condition(kube, namespace, "huge", "Running")) and c["reason"] == "Unschedulable"
        and c), timeout=60)
    assert running["status"] == "False"
    assert "Insufficient cpu" in running["message"], running
    assert status(kube, namespace, "huge")["jobStatus"] == "CREATED"
    pending = events(kube, namespace, "huge", "DriverPending")
    assert len(pending) == 1 and "Insufficient cpu" in pending[0], pending
    wide = kube.kubectl("get", "dfj", "huge", "-n", namespace, "-o", "wide").stdout
    assert "REASON" in wide and "Unschedulable" in wide, wide


def test_a_finished_jobs_pods_go_after_its_ttl_and_the_job_stays(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operator = operators.start()
    # Drivers that succeed after a second: KWOK reads the annotations, a real node runs the
    # job (which succeeds).
    succeeding = {"driver": {
        "metadata": {"annotations": {"dataflow.io/kwok-outcome": "Succeeded",
                                     "dataflow.io/kwok-after": "1s"}}}}
    # Sized so that both jobs' pods fit on one 2-core node.
    small = {"slotsPerExecutor": 2, "driver": {"cpu": "250m", "memory": "1Gi"},
             "slotSharingGroups": [{"name": "default", "cpu": "200m", "memory": "512Mi"}]}
    kube.apply(job_manifest("short", podTemplate=succeeding, ttlSecondsAfterFinished=2,
                            **small), namespace=namespace)
    kube.apply(job_manifest("kept", podTemplate=succeeding, **small), namespace=namespace)
    for name in ("short", "kept"):  # a second on KWOK; Spark's start and the job on a node
        wait_job_status(kube, namespace, name, "FINISHED", timeout=180)
    wait_until("short's driver pod deleted",
               lambda: owned(kube, namespace, "pods", "short") == [], timeout=30)
    wait_until("status.driver removed", lambda: "driver" not in status(kube, namespace,
                                                                        "short"))
    assert status(kube, namespace, "short")["jobStatus"] == "FINISHED"
    assert len(events(kube, namespace, "short", "CleanedUp")) == 1
    # Without a time to live the pod stays, as a Kubernetes Job's does.
    # (On a real node its executors may still be going away.)
    assert "kept-driver" in [p["metadata"]["name"] for p in owned(kube, namespace, "pods",
                                                                  "kept")]
    # An operator restart cleans up nothing twice.
    operator.stop()
    restarted = operators.start()
    wait_until("the restarted operator to resume both jobs", lambda: restarted.log.read_text(
        errors="replace").count("Handler 'build_registry.<locals>.spec_changed' succeeded") >= 2,
        timeout=60)
    time.sleep(1.5)  # three monitor cycles (and their clean-ups) at --poll-interval 0.5
    assert len(events(kube, namespace, "short", "CleanedUp")) == 1
    assert owned(kube, namespace, "pods", "kept") != []


def test_failing_driver_restarts_per_strategy_then_fails(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    # A driver that exits with code 1: KWOK reads the annotations, a real node runs the job,
    # whose function does not exist (a template may not replace the driver's command).
    failing = job_manifest("crashy", podTemplate={"driver": {
        "metadata": {"annotations": {"dataflow.io/kwok-outcome": "Failed",
                                     "dataflow.io/kwok-after": "1s",
                                     "dataflow.io/kwok-exit-code": "1"}}}})
    failing["spec"]["pipeline"][1]["function"] = "no_such_module:square"
    failing["spec"]["restartStrategy"]["attempts"] = 1  # each attempt is a driver pod's start
    kube.apply(failing, namespace=namespace)
    final = wait_job_status(kube, namespace, "crashy", "FAILED", timeout=240)
    assert final["restarts"] == 1
    # KWOK says how the container ended; a real driver says why first.
    assert "1 restarts used" in final["error"], final["error"]
    assert ("exited with code 1" in final["error"]
            or "cannot import module 'no_such_module'" in final["error"]), final["error"]
    assert condition(kube, namespace, "crashy", "Failed")["status"] == "True"  # type: ignore[index]
    # As a Kubernetes Job says it: a failed job has not succeeded.
    succeeded = condition(kube, namespace, "crashy", "Succeeded")
    assert succeeded is not None and succeeded["status"] == "False", succeeded
    assert len(events(kube, namespace, "crashy", "Restarting")) == 1
    assert len(events(kube, namespace, "crashy", "Failed")) == 1
    kube.kubectl("wait", "--for=condition=Failed", "dfj/crashy", "--namespace", namespace,
                 "--timeout=5s")


def test_a_hundred_jobs_applied_at_once_reach_provisioned(
        kube: Kube, namespace: str, operators: Operators) -> None:
    operators.start()
    names = [f"bulk-{i:03d}" for i in range(100)]
    kube.apply(*(job_manifest(n) for n in names), namespace=namespace)

    def provisioned() -> bool:
        found = kube.get("dataflowjobs", "--namespace", namespace) or {"items": []}
        ready = [j for j in found["items"] if any(
            c["type"] == "Provisioned" and c["status"] == "True"
            for c in (j.get("status") or {}).get("conditions", []))]
        return len(ready) == len(names)

    wait_until("100 Provisioned jobs", provisioned, timeout=240, interval=1)
    pods = (kube.get("pods", "--namespace", namespace) or {"items": []})["items"]
    assert len(pods) == 100


def test_jobs_of_a_deleted_namespace_are_forgotten(
        kube: Kube, namespace: str, operators: Operators) -> None:
    health_port = free_port()
    running = operators.start("kubernetes", "--health-port", str(health_port))
    kube.apply(job_manifest("doomed"), namespace=namespace)
    wait_job_status(kube, namespace, "doomed", "RUNNING")
    kube.kubectl("delete", "namespace", namespace, "--wait=true", timeout=180)
    # The status monitor's /healthz counts the jobs it knows: none, once it forgot this one.
    wait_until("the operator to forget the job", lambda: ", 0 jobs" in str(
        healthz(health_port)[1].get("monitor", "")), timeout=60)
    before = running.log.read_text(errors="replace").count("observing")
    time.sleep(1.5)  # three monitor cycles at --poll-interval 0.5
    after = running.log.read_text(errors="replace").count("observing")
    assert after == before, "the operator keeps observing a job whose namespace is gone"


def test_large_specs_leave_no_copy_in_annotations_and_oversize_ones_fail_once(
        kube: Kube, namespace: str, operators: Operators) -> None:
    running = operators.start()
    big = job_manifest("big", pipeline=[
        {"name": "source", "type": "collection", "args": {"elements": ["x" * 1000] * 100}},
        {"name": "out", "type": "discard", "inputs": ["source"]}])
    huge = job_manifest("huge", pipeline=[
        {"name": "source", "type": "collection", "args": {"elements": ["x" * 1000] * 200}},
        {"name": "out", "type": "discard", "inputs": ["source"]}])
    kube.apply(big, huge, namespace=namespace)
    wait_condition(kube, namespace, "big", "Provisioned")
    # kopf records what it handled once the handler (which wrote the condition) returned.
    wait_until("kopf's record of the handled spec", lambda: "dataflow.io/last-handled-digest" in (
        job(kube, namespace, "big")["metadata"].get("annotations") or {}))
    annotations = job(kube, namespace, "big")["metadata"].get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration")  # kubectl's own copy
    # kopf's record of what it handled is a digest, not a 100 KB copy of the spec.
    assert len(annotations["dataflow.io/last-handled-digest"]) == 64
    assert sum(len(value) for value in annotations.values()) < 1024, annotations.keys()
    failed = wait_condition(kube, namespace, "huge", "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "KiB; the operator allows at most 128 KiB" in failed["message"]
    time.sleep(3)
    assert len(events(kube, namespace, "huge", "Failed")) == 1
    assert "422" not in running.log.read_text(errors="replace")
