"""The control plane of the k8s tier is a real one: each test shows behaviour no mock has."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from kube_helpers import Kube
from planes import ON_KWOK

pytestmark = pytest.mark.k8s

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": PAUSE_IMAGE}],
            **spec,
        },
    }


def _on_kwok(name: str, **spec: Any) -> dict[str, Any]:
    """A pod for a KWOK node (beside a real node, the KWOK node is tainted: it tolerates that)."""
    return _pod(name, **ON_KWOK, **spec)


def _require_kwok(kube: Kube) -> list[str]:
    nodes = kube.kwok_nodes()
    if not nodes:
        if kube.started_here:
            pytest.fail("the local control plane registered no KWOK nodes")
        pytest.skip("the cluster of DATAFLOW_TEST_KUBECONFIG has no KWOK nodes")
    return nodes


def test_crd_cel_rule_rejects_violating_object(kube: Kube, namespace: str) -> None:
    group = f"t{secrets.token_hex(4)}.dataflow.io"
    crd_name = f"replicaranges.{group}"
    spec_schema = {
        "type": "object",
        "required": ["minReplicas", "maxReplicas"],
        "properties": {
            "minReplicas": {"type": "integer", "minimum": 0},
            "maxReplicas": {"type": "integer"},
        },
        "x-kubernetes-validations": [
            {
                "rule": "self.minReplicas <= self.maxReplicas",
                "message": "minReplicas must not exceed maxReplicas",
            }
        ],
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": "ReplicaRange",
                "plural": "replicaranges",
                "singular": "replicarange",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema},
                        }
                    },
                }
            ],
        },
    }

    def replica_range(name: str, **spec: Any) -> str:
        body = {"apiVersion": f"{group}/v1", "kind": "ReplicaRange", "metadata": {"name": name}}
        return json.dumps({**body, "spec": spec})

    kube.apply(crd)
    try:
        kube.kubectl("wait", "--for=condition=Established", f"crd/{crd_name}", "--timeout=60s")
        kube.kubectl("create", "-n", namespace, "-f", "-", input=replica_range("ok", minReplicas=1,
                     maxReplicas=3))  # fmt: skip

        rejected = kube.kubectl(
            "create", "-n", namespace, "-f", "-",
            input=replica_range("inverted", minReplicas=5, maxReplicas=2), check=False,
        )  # fmt: skip
        assert rejected.returncode != 0
        assert "minReplicas must not exceed maxReplicas" in rejected.stderr
        assert kube.get("replicaranges", "inverted", "-n", namespace) is None

        # The structural schema also prunes fields it does not declare.
        kube.kubectl(
            "create", "-n", namespace, "--validate=false", "-f", "-",
            input=replica_range("pruned", minReplicas=0, maxReplicas=0, surplus="dropped"),
        )  # fmt: skip
        stored = kube.get("replicaranges", "pruned", "-n", namespace)
        assert stored is not None
        assert stored["spec"] == {"minReplicas": 0, "maxReplicas": 0}
    finally:
        kube.kubectl("delete", "crd", crd_name, "--wait=false", check=False)


def _token_kubeconfig(kube: Kube, token: str, path: Path) -> Path:
    """A kubeconfig for the same API server that authenticates with `token` only."""
    admin = json.loads(kube.kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "robot", "user": {"token": token}}],
        "contexts": [{"name": "robot", "context": {"cluster": cluster["name"], "user": "robot"}}],
        "current-context": "robot",
    }
    path.write_text(json.dumps(config))
    return path


def test_rbac_denies_service_account_without_role(
    kube: Kube, namespace: str, tmp_path: Path
) -> None:
    kube.kubectl("create", "serviceaccount", "robot", "-n", namespace)
    token = kube.kubectl("create", "token", "robot", "-n", namespace, "--duration=10m").stdout
    robot_config = _token_kubeconfig(kube, token.strip(), tmp_path / "robot.kubeconfig")

    def as_robot(*args: str) -> Any:
        return kube.kubectl(f"--kubeconfig={robot_config}", *args, check=False)

    who = as_robot("auth", "whoami", "-o", "json")
    assert who.returncode == 0, who.stderr
    username = json.loads(who.stdout)["status"]["userInfo"]["username"]
    assert username == f"system:serviceaccount:{namespace}:robot"

    denied = as_robot("get", "configmaps", "-n", namespace)
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr
    assert f"system:serviceaccount:{namespace}:robot" in denied.stderr

    kube.kubectl("create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps",
                 "-n", namespace)  # fmt: skip
    kube.kubectl("create", "rolebinding", "robot-reads-cms", "--role=cm-reader",
                 f"--serviceaccount={namespace}:robot", "-n", namespace)  # fmt: skip
    kube.wait_until(
        "the role binding to take effect",
        lambda: as_robot("get", "configmaps", "-n", namespace).returncode == 0,
    )
    # The grant is exactly what the role says: no secrets, no other namespace.
    secrets_denied = as_robot("get", "secrets", "-n", namespace)
    assert secrets_denied.returncode != 0 and "forbidden" in secrets_denied.stderr
    elsewhere = as_robot("get", "configmaps", "-n", "default")
    assert elsewhere.returncode != 0 and "forbidden" in elsewhere.stderr


def test_restricted_pod_security_rejects_privileged_pod(kube: Kube, namespace: str) -> None:
    privileged = _pod("privileged")
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    manifest = json.dumps(privileged)

    # Unlabelled, the namespace is "privileged": the API server itself allows such pods.
    allowed = kube.kubectl("create", "-n", namespace, "--dry-run=server", "-f", "-",
                           input=manifest, check=False)  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr

    kube.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted",
                 "pod-security.kubernetes.io/enforce-version=latest")  # fmt: skip
    rejected = kube.kubectl("create", "-n", namespace, "-f", "-", input=manifest, check=False)
    assert rejected.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in rejected.stderr
    assert "privileged" in rejected.stderr
    assert kube.get("pod", "privileged", "-n", namespace) is None

    compliant = _pod(
        "compliant",
        securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    )
    compliant["spec"]["containers"][0]["securityContext"] = {
        "runAsUser": 65532,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    kube.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(compliant))
    assert kube.get("pod", "compliant", "-n", namespace) is not None


def test_deleting_owner_garbage_collects_dependents(kube: Kube, namespace: str) -> None:
    def config_map(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if owner is not None:
            metadata["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                }
            ]
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {}}

    kube.apply(config_map("owner"), config_map("orphaning-owner"), config_map("bystander"))
    owner = kube.get("configmap", "owner", "-n", namespace)
    orphaning_owner = kube.get("configmap", "orphaning-owner", "-n", namespace)
    assert owner is not None and orphaning_owner is not None
    kube.apply(
        config_map("dependent-a", owner),
        config_map("dependent-b", owner),
        config_map("survivor", orphaning_owner),
    )

    def gone(*names: str) -> bool:
        return all(kube.get("configmap", name, "-n", namespace) is None for name in names)

    kube.kubectl("delete", "configmap", "owner", "-n", namespace, "--cascade=background")
    kube.wait_until(
        "the garbage collector to delete the dependents",
        lambda: gone("dependent-a", "dependent-b"),
    )
    assert kube.get("configmap", "bystander", "-n", namespace) is not None

    # Orphaning deletion: the collector strips the owner reference and keeps the dependent.
    kube.kubectl("delete", "configmap", "orphaning-owner", "-n", namespace, "--cascade=orphan")
    kube.wait_until("the orphaning owner to go", lambda: gone("orphaning-owner"))
    survivor = kube.get("configmap", "survivor", "-n", namespace)
    assert survivor is not None
    assert not survivor["metadata"].get("ownerReferences")


def test_pod_is_scheduled_onto_kwok_node_and_runs(kube: Kube, namespace: str) -> None:
    nodes = _require_kwok(kube)
    kube.apply(_on_kwok("runner"), namespace=namespace)

    def running() -> dict[str, Any] | None:
        pod = kube.get("pod", "runner", "-n", namespace)
        return pod if pod and pod["status"].get("phase") == "Running" else None

    pod = kube.wait_until("the pod to run", running)
    assert pod["spec"]["nodeName"] in nodes
    conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert conditions["PodScheduled"] == "True"
    assert conditions["Ready"] == "True"
    assert pod["status"]["podIP"]

    # The scheduler really decides: a pod that fits no node stays Pending, Unschedulable.
    kube.apply(_pod("homeless", nodeSelector={"type": "nowhere"}), namespace=namespace)

    def unschedulable() -> bool:
        pod = kube.get("pod", "homeless", "-n", namespace) or {}
        return any(
            c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
            for c in pod.get("status", {}).get("conditions") or []
        )

    kube.wait_until("the scheduler to mark the pod unschedulable", unschedulable)
    homeless = kube.get("pod", "homeless", "-n", namespace)
    assert homeless is not None
    assert homeless["status"]["phase"] == "Pending"
    assert not homeless["spec"].get("nodeName")


def test_kwok_outcome_annotations_end_pods(kube: Kube, namespace: str) -> None:
    _require_kwok(kube)
    kube.apply(
        _on_kwok("keeps-running"),
        _on_kwok("succeeds", annotations={"dataflow.io/kwok-outcome": "Succeeded"}),
        _on_kwok(
            "fails",
            annotations={
                "dataflow.io/kwok-outcome": "Failed",
                "dataflow.io/kwok-after": "2s",
                "dataflow.io/kwok-exit-code": "7",
            },
        ),
        namespace=namespace,
    )

    def phase(name: str) -> str:
        pod = kube.get("pod", name, "-n", namespace) or {}
        return str(pod.get("status", {}).get("phase", ""))

    kube.wait_until("the pod to succeed", lambda: phase("succeeds") == "Succeeded")
    kube.wait_until("the pod to fail", lambda: phase("fails") == "Failed")
    failed = kube.get("pod", "fails", "-n", namespace)
    assert failed is not None
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 7
    assert "running" not in failed["status"]["containerStatuses"][0]["state"]
    succeeded = kube.get("pod", "succeeds", "-n", namespace)
    assert succeeded is not None
    assert succeeded["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert phase("keeps-running") == "Running"


def test_deployment_rolls_out_through_controllers(kube: Kube, namespace: str) -> None:
    _require_kwok(kube)
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    **ON_KWOK,
                    "containers": [{"name": "main", "image": PAUSE_IMAGE}],
                },
            },
        },
    }
    kube.apply(deployment, namespace=namespace)
    kube.kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=60s")
    pods = kube.get("pods", "-n", namespace, "-l", "app=web")
    assert pods is not None
    assert len(pods["items"]) == 2
    assert all(pod["status"]["phase"] == "Running" for pod in pods["items"])
    owners = {pod["metadata"]["ownerReferences"][0]["kind"] for pod in pods["items"]}
    assert owners == {"ReplicaSet"}


def test_namespace_deletion_removes_its_contents(kube: Kube) -> None:
    name = f"t-doomed-{secrets.token_hex(3)}"
    kube.kubectl("create", "namespace", name)
    kube.kubectl("create", "configmap", "inside", "-n", name)
    kube.kubectl("delete", "namespace", name, "--timeout=60s")
    assert kube.get("namespace", name) is None
    # NamespaceLifecycle admission: nothing can be created in a namespace that is gone.
    late = kube.kubectl("create", "configmap", "late", "-n", name, check=False)
    assert late.returncode != 0 and "not found" in late.stderr


def test_the_tests_in_process_get_reads_what_kubectl_get_prints(
        kube: Kube, namespace: str, crd: None) -> None:
    """Kube.get reads through the API from the test's process (tests poll it several times a
    second); what it returns is what `kubectl get -o json` prints, for every form the tests
    use, and kubectl still reads the forms it does not know."""
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "read-me", "labels": {"app": "read"}}},
               namespace=namespace)
    forms = [("configmap", "read-me", "--namespace", namespace),
             ("configmaps", "--namespace", namespace, "-l", "app=read"),
             ("cm", "--namespace", namespace, "--field-selector", "metadata.name=read-me"),
             ("ConfigMap", "missing", "--namespace", namespace),
             ("dataflowjobs", "--namespace", namespace), ("dfj", "none", "-n", namespace),
             ("serviceaccount", "default", f"--namespace={namespace}"),
             ("namespace", namespace), ("nodes",)]
    for form in forms:
        read = kube.get(*form)
        assert kube._api is not None  # read through the API, not by kubectl
        assert read == kube._kubectl_get(form), form
    listed = kube.get("configmaps", "--namespace", namespace, "-l", "app=read")
    assert listed is not None and [(i["kind"], i["metadata"]["name"]) for i in
                                   listed["items"]] == [("ConfigMap", "read-me")]
    assert kube.get("dfj", "none", "-n", namespace) is None
    # Several names at once are kubectl's to read.
    both = kube.get("configmap", "read-me", "kube-root-ca.crt", "--namespace", namespace)
    assert both is not None and len(both["items"]) == 2


def test_the_tests_in_process_can_i_answers_what_kubectl_auth_can_i_does(
        kube: Kube, namespace: str, crd: None) -> None:
    """Kube.can_i asks in the test's process (the RBAC tests ask hundreds of questions); a
    service account given a Role answers as `kubectl auth can-i --as` does: its Role's rights
    and its groups' (the API server adds them), subresources, a CRD's group, every namespace."""
    account = f"system:serviceaccount:{namespace}:asker"
    kube.kubectl("create", "serviceaccount", "asker", "-n", namespace)
    kube.kubectl("create", "role", "asker", "--verb=get,list", "--resource=pods,pods/log",
                 "--resource=dataflowjobs.dataflow.io", "-n", namespace)
    kube.kubectl("create", "rolebinding", "asker", "--role=asker",
                 f"--serviceaccount={namespace}:asker", "-n", namespace)
    questions = [("get", "pods", namespace, None), ("list", "pods", namespace, None),
                 ("delete", "pods", namespace, None), ("get", "pods", "default", None),
                 ("get", "pods", None, None), ("get", "pods", namespace, "log"),
                 ("create", "pods", namespace, "exec"), ("get", "dfj", namespace, None),
                 ("patch", "dataflowjobs", namespace, None),
                 ("list", "dataflowjobs.dataflow.io", namespace, None),
                 ("get", "roles.rbac.authorization.k8s.io", namespace, None),
                 ("create", "selfsubjectaccessreviews", namespace, None)]  # by its groups
    answers = []
    for verb, resource, where, subresource in questions:
        args = ["auth", "can-i", verb, resource, f"--as={account}",
                *([f"--subresource={subresource}"] if subresource else []),
                *(["--namespace", where] if where else ["--all-namespaces"])]
        said = kube.kubectl(*args, check=False).stdout.strip()
        answers.append(kube.can_i(verb, resource, account=account, namespace=where,
                                  subresource=subresource))
        assert answers[-1] == (said == "yes"), (args, said)
    assert answers == [True, True, False, False, False, True, False, True, False, True, False,
                       True]
