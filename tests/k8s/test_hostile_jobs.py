"""Jobs that try to get more than their author's rights: each refused with the field named, no
pod created anywhere, and nothing of anyone else's taken over."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kube_helpers import Kube
from operator_helpers import (
    Operators,
    condition,
    events,
    job_manifest,
    owned,
    status,
    wait_condition,
)

pytestmark = pytest.mark.k8s


@pytest.fixture
def victim(kube: Kube, namespace: str) -> Iterator[str]:
    """Another namespace with a powerful service account in it."""
    name = f"{namespace}-victim"
    kube.kubectl("create", "namespace", name)
    kube.kubectl("create", "serviceaccount", "victim-admin", "--namespace", name)
    kube.kubectl("create", "rolebinding", "victim-admin", "--clusterrole=admin",
                 f"--serviceaccount={name}:victim-admin", "--namespace", name)
    try:
        yield name
    finally:
        kube.kubectl("delete", "namespace", name, "--wait=false", check=False)


def _hostile(victim: str) -> dict[str, tuple[dict[str, Any], str]]:
    """Job name -> (spec changes, the field its Failed condition must name)."""
    sh = "sh -c 'id > /tmp/pwned'"
    return {
        "cross-namespace": ({"podTemplate": {"driver": {
            "metadata": {"namespace": victim},
            "spec": {"serviceAccountName": "victim-admin"}}}},
            "spec.podTemplate.driver.metadata.namespace"),
        "spark-namespace": ({"sparkConf": {"spark.kubernetes.namespace": victim}},
                            "spec.sparkConf[spark.kubernetes.namespace]"),
        "secret-volume": ({"podTemplate": {"executor": {"spec": {"volumes": [
            {"name": "s", "secret": {"secretName": "anything"}}]}}}},
            "spec.podTemplate.executor.spec.volumes[0].secret"),
        "unconfined": ({"podTemplate": {"driver": {"spec": {"securityContext": {
            "seccompProfile": {"type": "Unconfined"}}}}}},
            "spec.podTemplate.driver.spec.securityContext.seccompProfile.type"),
        "no-drop": ({"podTemplate": {"driver": {"spec": {"containers": [
            {"name": "driver", "securityContext": {"capabilities": {"drop": []}}}]}}}},
            "spec.podTemplate.driver.spec.containers[0].securityContext.capabilities.drop"),
        "os-system": ({"pipeline": [
            {"name": "cmds", "type": "collection", "args": {"elements": [sh]}},
            {"name": "run", "type": "map", "function": "os:system", "inputs": ["cmds"]},
            {"name": "out", "type": "discard", "inputs": ["run"]}]},
            "spec.pipeline[1].function"),
        "own-image": ({"image": "registry.example/evil:1"}, "spec.image"),
        # Spark settings that would say two things in spark-defaults.conf.
        "key-injection": ({"sparkConf": {"spark.kubernetes.namespace=": victim}},
                          "spec.sparkConf['spark.kubernetes.namespace=']"),
        "template-file-injection": ({"sparkConf": {
            "spark.kubernetes.executor.podTemplateFile=": "/opt/dataflow/pyfiles/0/t.yaml"}},
            "spec.sparkConf['spark.kubernetes.executor.podTemplateFile=']"),
        "prefix-injection": ({"sparkConf": {"spark.kubernetes.executor.podNamePrefix:": "x"}},
                             "spec.sparkConf['spark.kubernetes.executor.podNamePrefix:']"),
        "value-injection": ({"sparkConf": {
            "spark.sql.shuffle.partitions": f"1\nspark.kubernetes.namespace {victim}"}},
            "spec.sparkConf[spark.sql.shuffle.partitions]"),
        "apparmor-annotation": ({"sparkConf": {
            "spark.kubernetes.driver.annotation."
            "container.apparmor.security.beta.kubernetes.io/driver": "unconfined"}},
            "spec.sparkConf[spark.kubernetes.driver.annotation."),
        # The operator's containers, nulls, and where pods run.
        "driver-command": ({"podTemplate": {"driver": {"spec": {"containers": [
            {"name": "driver", "command": ["/bin/sh", "-c", "id"]}]}}}},
            "spec.podTemplate.driver.spec.containers[0].command"),
        "null-context": ({"podTemplate": {"executor": {"spec": {"securityContext": None}}}},
                         "spec.podTemplate.executor.spec.securityContext"),
        "every-taint": ({"podTemplate": {"executor": {"spec": {"tolerations": [
            {"operator": "Exists"}]}}}}, "spec.podTemplate.executor.spec.tolerations[0]"),
        "control-plane": ({"podTemplate": {"driver": {"spec": {"nodeSelector": {
            "node-role.kubernetes.io/control-plane": ""}}}}},
            "spec.podTemplate.driver.spec.nodeSelector.node-role.kubernetes.io/control-plane"),
        # Functions that run code given as a string.
        "cprofile-run": (_one_map("cProfile:run"), "spec.pipeline[1].function"),
        "yaml-unsafe-load": (_one_map("yaml:unsafe_load"), "spec.pipeline[1].function"),
        # Sizes nothing can run with, and checkpoints of a job that takes none.
        "zero-memory": ({"slotSharingGroups": [{"name": "default", "memory": "0"}]},
                        "slotSharingGroups[0].memory"),
        "zero-cpu": ({"slotSharingGroups": [{"name": "default", "cpu": "0"}]},
                     "slotSharingGroups[0].cpu"),
        "one-byte-driver": ({"driver": {"memory": "1"}}, "spec.driver.memory"),
        "batch-checkpoints": ({"runtimeMode": "BATCH", "checkpointing": {"interval": "1s"}},
                              "checkpointing"),
        "key-by-list": ({"pipeline": [
            {"name": "src", "type": "collection", "args": {"elements": [[1, 2]]}},
            {"name": "sum", "type": "sum", "args": {"field": 1},
             "inputs": [{"from": "src", "keyBy": [0]}]},
            {"name": "out", "type": "discard", "inputs": ["sum"]}]},
            "spec.pipeline[1].inputs[0].keyBy"),
    }


def _one_map(function: str) -> dict[str, Any]:
    return {"pipeline": [
        {"name": "cmds", "type": "collection", "args": {"elements": ["print(1)"]}},
        {"name": "run", "type": "map", "function": function, "inputs": ["cmds"]},
        {"name": "out", "type": "discard", "inputs": ["run"]}]}


def test_hostile_jobs_are_refused_naming_the_field_and_run_nothing(
        kube: Kube, namespace: str, victim: str, operators: Operators) -> None:
    # The namespace enforces nothing: the operator's own checks must hold without it.
    operators.start()
    hostile = _hostile(victim)
    by_api_server = []
    for name, (change, field) in hostile.items():
        applied = kube.kubectl("apply", "--server-side", "--namespace", namespace, "-f", "-",
                               input=json.dumps(job_manifest(name, **change)), check=False)
        if applied.returncode != 0:  # the CRD's rules, or the chart's policies where bound
            assert (field.split(".", 1)[-1] in applied.stderr
                    or "ValidatingAdmissionPolicy" in applied.stderr), (name, applied.stderr)
            by_api_server.append(name)
    by_operator = [name for name in hostile if name not in by_api_server]
    print(f"\n{len(hostile)} hostile jobs refused: {len(by_api_server)} by the API server "
          f"({', '.join(by_api_server)}), {len(by_operator)} by the operator (InvalidSpec)")
    for name in by_operator:
        field = hostile[name][1]
        failed = wait_condition(kube, namespace, name, "Failed")
        assert failed["reason"] == "InvalidSpec", (name, failed)
        assert field in failed["message"], (name, failed["message"])
        assert status(kube, namespace, name)["jobStatus"] == "FAILED"
        succeeded = condition(kube, namespace, name, "Succeeded")
        assert succeeded is not None and succeeded["status"] == "False", name
        assert any(field in e for e in events(kube, namespace, name, "Failed")), name
        assert owned(kube, namespace, "pods", name) == [], name
    assert by_operator  # the operator's own checks hold where no admission policy is bound
    for where in (namespace, victim):
        pods = kube.get("pods", "--namespace", where) or {}
        assert pods.get("items") == [], where
    # What the victim's account may do is unchanged for the job's own (none) accounts.
    account = f"system:serviceaccount:{namespace}:dataflow-driver-cross-namespace"
    assert not kube.can_i("get", "pods", account=account, namespace=victim)


def test_objects_of_someone_else_are_never_taken_over(
        kube: Kube, namespace: str, operators: Operators) -> None:
    # A ConfigMap and a Role with the names the job's would have, made by someone else.
    kube.kubectl("create", "configmap", "squat-plan", "--from-literal=mine=yes",
                 "--namespace", namespace)
    kube.kubectl("create", "role", "squat-driver", "--verb=get", "--resource=secrets",
                 "--namespace", namespace)
    operators.start()
    kube.apply(job_manifest("squat"), namespace=namespace)
    failed = wait_condition(kube, namespace, "squat", "Failed")
    assert failed["reason"] == "ProvisioningFailed"
    assert "squat-plan" in failed["message"] and "not owned" in failed["message"]
    config = kube.get("configmap", "squat-plan", "--namespace", namespace)
    assert config is not None and config["data"] == {"mine": "yes"}
    assert not config["metadata"].get("ownerReferences")
    role = kube.get("role", "squat-driver", "--namespace", namespace)
    assert role is not None and role["rules"][0]["resources"] == ["secrets"]
    assert owned(kube, namespace, "pods", "squat") == []

    # Deleting the job leaves the squatter's objects alone.
    kube.kubectl("delete", "dataflowjob", "squat", "--namespace", namespace)
    assert kube.get("configmap", "squat-plan", "--namespace", namespace) is not None
    assert kube.get("role", "squat-driver", "--namespace", namespace) is not None


@pytest.mark.parametrize("name", ["a" * 53, "with.dot"])
def test_names_no_derived_object_could_take_are_refused_at_admission(
        kube: Kube, namespace: str, crd: None, name: str) -> None:
    manifest = json.dumps(job_manifest(name))
    result = kube.kubectl("apply", "--namespace", namespace, "-f", "-", input=manifest,
                          check=False)
    assert result.returncode != 0
    assert "metadata.name must be a DNS label of at most 52 characters" in result.stderr
    assert kube.get("dataflowjob", name, "--namespace", namespace) is None


def test_the_longest_name_allowed_fits_every_derived_object(
        kube: Kube, namespace: str, operators: Operators) -> None:
    name = "n" * 52
    operators.start()
    kube.apply(job_manifest(name), namespace=namespace)
    wait_condition(kube, namespace, name, "Provisioned")
    assert [p["metadata"]["name"] for p in owned(kube, namespace, "pods", name)] == [
        f"{name}-driver"]
