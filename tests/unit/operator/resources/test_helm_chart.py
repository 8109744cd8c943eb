"""The Helm chart, rendered: `helm lint`, and `helm template` for both watch scopes.

helm is built from its Go module by hack/install-helm (cached after the first build); these
tests fail, not skip, when it cannot be had.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from dataflow_engine.compiler.policy import restricted_problems
from dataflow_operator.commands import register
from dataflow_operator.crd import CRD_NAME, SNAPSHOT_CRD_NAME
from dataflow_operator.kube import _PATHS
from dataflow_operator.resources.rbac import DRIVER_RULES
from dataflow_operator.resources.security import RUN_AS_USER

pytestmark = pytest.mark.unit

REPO_ROOT = Path(__file__).resolve().parents[4]
CHART = REPO_ROOT / "helm" / "dataflow-operator"
INSTALL_HELM = REPO_ROOT / "hack" / "install-helm"
RELEASE, NAMESPACE = "df", "dataflow-system"
FULLNAME = "df-dataflow-operator"

Rule = tuple[str, str, str]

#: What the operator's account may do, as (API group, resource, verb): exactly this.
OPERATOR_RULES: set[Rule] = {
    *{("dataflow.io", "dataflowjobs", v) for v in ("get", "list", "watch", "patch")},
    *{("dataflow.io", "dataflowjobs/status", v) for v in ("get", "patch", "update")},
    *{("dataflow.io", "dataflowsnapshots", v)
      for v in ("get", "list", "watch", "create", "patch", "delete")},
    *{("dataflow.io", "dataflowsnapshots/status", v) for v in ("get", "patch")},
    *{("", "pods", v)
      for v in ("get", "list", "watch", "create", "delete", "deletecollection", "patch")},
    *{("", r, v) for r in ("configmaps", "services", "serviceaccounts")
      for v in ("get", "create", "patch", "delete")},
    ("", "services/proxy", "get"),
    ("", "services/proxy", "create"),  # POST /savepoints to a driver
    *{("rbac.authorization.k8s.io", r, v) for r in ("roles", "rolebindings")
      for v in ("get", "create", "patch", "delete")},
    ("", "events", "create"),
    ("", "events", "patch"),
}
#: The leader election's, in the release's namespace only.
LEASE_RULES: set[Rule] = {("coordination.k8s.io", "leases", v) for v in ("create", "get", "update")}


def _helm(helm: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([helm, *args], capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def _render(helm: str, *sets: str, extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    args = [arg for value in sets for arg in ("--set", value)]
    out = _helm(helm, "template", RELEASE, str(CHART), "--namespace", NAMESPACE, *args,
                *extra).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _one(objects: list[dict[str, Any]], kind: str, namespace: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind
             and (namespace is None or o["metadata"].get("namespace") == namespace)]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def _rules(role: dict[str, Any]) -> set[Rule]:
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def _operator_args(container: dict[str, Any]) -> argparse.Namespace:
    """The container's arguments, as the image's entrypoint hands them to `dataflow`."""
    assert container["args"][0] == "operator"
    parser = argparse.ArgumentParser(prog="dataflow")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(container["args"])


@pytest.fixture(scope="module")
def clusterwide(helm: str) -> list[dict[str, Any]]:
    return _render(helm, "clusterWide=true")


@pytest.fixture(scope="module")
def namespaced(helm: str) -> list[dict[str, Any]]:
    return _render(helm, "watchNamespaces={team-a,team-b}")


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


# -- lint ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [[], ["watchNamespaces={team-a,team-b}"],
                                    ["metrics.serviceMonitor.enabled=true"]])
def test_helm_lint(helm: str, values: list[str]) -> None:
    args = [arg for value in values for arg in ("--set", value)]
    result = _helm(helm, "lint", "--strict", str(CHART), *args)
    assert "0 chart(s) failed" in result.stdout


def test_helm_is_the_pinned_version(helm: str) -> None:
    pinned = next(line.split("=", 1)[1] for line in INSTALL_HELM.read_text().splitlines()
                  if line.startswith("HELM_VERSION="))
    assert _helm(helm, "version", "--template", "{{.Version}}").stdout == pinned


# -- the CRD -------------------------------------------------------------------------------------


def test_chart_crds_are_the_generated_crds() -> None:
    """crds/ at the root is generated from the models (test_crd.py); the chart ships a copy."""
    names = sorted(f"{name}.yaml" for name in (CRD_NAME, SNAPSHOT_CRD_NAME))
    for name in names:
        source, copy = REPO_ROOT / "crds" / name, CHART / "crds" / name
        assert copy.read_bytes() == source.read_bytes(), (
            f"cp {source.relative_to(REPO_ROOT)} {copy}")
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == names


def test_crds_are_installed_with_the_chart(helm: str) -> None:
    objects = _render(helm, extra=("--include-crds",))
    crds = {o["metadata"]["name"]: o for o in objects
            if o["kind"] == "CustomResourceDefinition"}
    assert crds == {name: yaml.safe_load((REPO_ROOT / "crds" / f"{name}.yaml").read_text())
                    for name in (CRD_NAME, SNAPSHOT_CRD_NAME)}


# -- the Deployment ------------------------------------------------------------------------------


def test_two_replicas_elect_a_leader_and_roll(helm: str,
                                             clusterwide: list[dict[str, Any]]) -> None:
    spec = _one(clusterwide, "Deployment")["spec"]
    assert (spec["replicas"], spec["strategy"]) == (
        2, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}})
    container = _container(clusterwide)
    args = _operator_args(container)
    assert (args.leader_election, args.leader_election_namespace, args.leader_election_id) == (
        True, NAMESPACE, FULLNAME)
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"POD_NAME": "metadata.name"}
    # The Lease's Role: create one, then read and renew only the release's own.
    role = _one([o for o in clusterwide if o["metadata"]["name"].endswith("-leader-election")],
                "Role", NAMESPACE)
    assert _rules(role) == LEASE_RULES
    assert [r.get("resourceNames") for r in role["rules"]] == [None, [FULLNAME]]
    binding = _one([o for o in clusterwide if o["metadata"]["name"].endswith("-leader-election")],
                   "RoleBinding", NAMESPACE)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME,
                                    "namespace": NAMESPACE}]


def test_without_leader_election_one_replica_recreated(helm: str) -> None:
    objects = _render(helm, "leaderElection.enabled=false", "replicaCount=1")
    spec = _one(objects, "Deployment")["spec"]
    assert (spec["replicas"], spec["strategy"]) == (1, {"type": "Recreate"})
    assert not _operator_args(_container(objects)).leader_election
    assert not [o for o in objects if "leader-election" in o["metadata"]["name"]]
    rejected = _helm(helm, "template", RELEASE, str(CHART), "--set",
                     "leaderElection.enabled=false", check=False)  # still 2 replicas
    assert rejected.returncode != 0 and "replicaCount" in rejected.stderr


def test_deployment_meets_the_restricted_pod_security_standard(
        clusterwide: list[dict[str, Any]]) -> None:
    template = _one(clusterwide, "Deployment")["spec"]["template"]
    pod = template["spec"]
    assert list(restricted_problems(pod, "template.spec")) == []
    assert pod["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": RUN_AS_USER, "runAsGroup": RUN_AS_USER,
        "fsGroup": RUN_AS_USER, "seccompProfile": {"type": "RuntimeDefault"}}
    container = _container(clusterwide)
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"}}
    assert container["volumeMounts"] == [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "status-key", "mountPath": "/etc/dataflow-operator/status-key",
         "readOnly": True}]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(volumes) == {"tmp", "status-key"} and "emptyDir" in volumes["tmp"]
    assert volumes["status-key"]["secret"] == {"secretName": f"{FULLNAME}-status-key",
                                               "defaultMode": 0o440}
    assert not any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
    assert pod["serviceAccountName"] == FULLNAME


def test_probes_use_kopfs_health_endpoint(clusterwide: list[dict[str, Any]]) -> None:
    container = _container(clusterwide)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 8080, "metrics": 9090}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert _operator_args(container).health_port == 8080


def test_resources_and_image(helm: str, clusterwide: list[dict[str, Any]]) -> None:
    container = _container(clusterwide)
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "256Mi"},
                                      "limits": {"memory": "512Mi"}}
    assert container["image"] == "dataflow-operator:0.1.0"  # the chart's appVersion
    args = _operator_args(container)
    assert (args.backend, args.image, args.poll_interval, args.savepoint_timeout,
            args.jvm_options) == ("kubernetes", "dataflow-operator:0.1.0", 1.0, 120.0, "")

    custom = _container(_render(helm, "image.repository=registry.example/dfo",
                                "image.tag=1.2.3", "executorImage=registry.example/jobs:9",
                                "pollInterval=0.5", "savepointTimeout=300", "verbose=true",
                                "jvmOptions=-XX:TieredStopAtLevel=1 -Xss2m"))
    assert custom["image"] == "registry.example/dfo:1.2.3"
    args = _operator_args(custom)
    assert (args.image, args.poll_interval, args.savepoint_timeout, args.verbose,
            args.jvm_options) == ("registry.example/jobs:9", 0.5, 300.0, True,
                                  "-XX:TieredStopAtLevel=1 -Xss2m")


# -- RBAC per watch scope ------------------------------------------------------------------------


def test_the_status_key_is_a_random_secret_the_operator_reads(
        helm: str, clusterwide: list[dict[str, Any]]) -> None:
    import base64

    secret = _one(clusterwide, "Secret")
    assert secret["metadata"]["name"] == f"{FULLNAME}-status-key"
    key = base64.b64decode(secret["data"]["key"])
    assert len(key) == 48 and key != base64.b64decode(_one(_render(helm), "Secret")["data"]["key"])
    args = _operator_args(_container(clusterwide))
    assert args.status_key_file == Path("/etc/dataflow-operator/status-key/key")


def test_a_status_key_secret_of_ones_own_replaces_the_charts(helm: str) -> None:
    """For GitOps renders, where `lookup` cannot keep the random key."""
    objects = _render(helm, "statusKey.existingSecret=team-key")
    assert "Secret" not in {o["kind"] for o in objects}
    volumes = {v["name"]: v for v in _one(objects, "Deployment")["spec"]["template"]["spec"][
        "volumes"]}
    assert volumes["status-key"]["secret"]["secretName"] == "team-key"


def test_all_namespaces_get_a_cluster_role(clusterwide: list[dict[str, Any]]) -> None:
    kinds = sorted(o["kind"] for o in clusterwide if "ValidatingAdmission" not in o["kind"])
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding",
                     "Secret", "Service", "ServiceAccount"]  # the Role: leader election's
    assert _rules(_one(clusterwide, "ClusterRole")) == OPERATOR_RULES
    binding = _one(clusterwide, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole", "name": FULLNAME}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME,
                                    "namespace": NAMESPACE}]
    args = _operator_args(_container(clusterwide))
    assert (args.all_namespaces, args.namespaces) == (True, [])
    # Never the cluster's own namespaces nor the operator's (the operator-scope policy keeps
    # its account out of them too).
    assert set(args.excluded_namespaces) == {"kube-system", "kube-public", "kube-node-lease",
                                             NAMESPACE}


def test_a_namespace_list_gets_a_role_in_each(namespaced: list[dict[str, Any]]) -> None:
    assert not [o for o in namespaced if o["kind"].startswith("Cluster")]
    namespaced = [o for o in namespaced if "leader-election" not in o["metadata"]["name"]]
    for namespace in ("team-a", "team-b"):
        role = _one(namespaced, "Role", namespace)
        assert role["metadata"]["name"] == FULLNAME
        assert _rules(role) == OPERATOR_RULES
        binding = _one(namespaced, "RoleBinding", namespace)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": FULLNAME}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": FULLNAME,
                                        "namespace": NAMESPACE}]
    assert len([o for o in namespaced if o["kind"] in ("Role", "RoleBinding")]) == 4
    _one(namespaced, "ServiceAccount", NAMESPACE)
    args = _operator_args(_container(namespaced))
    assert (args.all_namespaces, args.namespaces) == (False, ["team-a", "team-b"])


def test_rules_are_least_privilege() -> None:
    names = {(group, resource) for group, resource, _ in OPERATOR_RULES}
    assert not any("*" in part for rule in OPERATOR_RULES for part in rule)
    assert not {("", "secrets"), ("", "pods/exec"), ("", "namespaces")} & names
    assert not {r for g, r in names if g == "apiextensions.k8s.io" or r.startswith("cluster")}


def test_rules_cover_what_the_operator_calls() -> None:
    """Every kind kube.py manages, and every verb the driver's Role grants (RBAC only lets a
    subject grant what it holds itself)."""
    for kind, (prefix, plural) in _PATHS.items():
        if kind == "Secret":  # the local backend's, with a developer's kubeconfig
            continue
        group = "" if prefix == "/api/v1" else prefix.split("/")[2]
        assert {(group, plural, "get"), (group, plural, "create")} & (
            OPERATOR_RULES | LEASE_RULES), kind
    granted = {(g, r, v) for rule in DRIVER_RULES for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    assert granted <= OPERATOR_RULES


def test_rbac_can_be_left_to_the_user(helm: str) -> None:
    objects = _render(helm, "rbac.create=false", "serviceAccount.create=false",
                      "serviceAccount.name=existing", "admissionPolicies.enabled=false")
    assert sorted(o["kind"] for o in objects) == ["Deployment", "Secret", "Service"]
    pod = _one(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "existing"


# -- metrics -------------------------------------------------------------------------------------


def test_metrics_service_and_scrape_annotations(clusterwide: list[dict[str, Any]]) -> None:
    service = _one(clusterwide, "Service")
    assert service["metadata"]["name"] == f"{FULLNAME}-metrics"
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9090,
                                         "targetPort": "metrics", "protocol": "TCP"}]
    template = _one(clusterwide, "Deployment")["spec"]["template"]
    assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    assert template["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true", "prometheus.io/port": "9090",
        "prometheus.io/path": "/metrics"}
    assert _operator_args(_container(clusterwide)).metrics_port == 9090
    assert not [o for o in clusterwide if o["kind"] == "ServiceMonitor"]


def test_metrics_can_be_turned_off(helm: str) -> None:
    objects = _render(helm, "metrics.enabled=false")
    assert not [o for o in objects if o["kind"] == "Service"]
    container = _container(objects)
    assert [p["name"] for p in container["ports"]] == ["health"]
    assert _operator_args(container).metrics_port == 0  # 0 disables the endpoint
    assert "annotations" not in _one(objects, "Deployment")["spec"]["template"]["metadata"]


def test_service_monitor_behind_a_value(helm: str) -> None:
    objects = _render(helm, "metrics.serviceMonitor.enabled=true",
                      "metrics.serviceMonitor.labels.release=prometheus")
    monitor = _one(objects, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics",
                                             "interval": "30s"}]
    service = _one(objects, "Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        service["metadata"]["labels"].items())
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    refused = _helm(helm, "template", RELEASE, str(CHART), "--set", "metrics.enabled=false",
                    "--set", "metrics.serviceMonitor.enabled=true", check=False)
    assert refused.returncode != 0 and "needs metrics.enabled" in refused.stderr


def test_values_defaults() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert (values["replicaCount"], values["leaderElection"]) == (2, {"enabled": True})
    assert (values["watchNamespaces"], values["clusterWide"]) == (["default"], False)
    assert values["admissionPolicies"]["enabled"] is True
    assert values["jobPolicy"]["allowControlPlane"] is False
    assert values["executorImage"] == "" and values["jvmOptions"] == ""
    assert values["health"] == {"port": 8080}
    assert (values["metrics"]["enabled"], values["metrics"]["port"]) == (True, 9090)
    assert values["metrics"]["serviceMonitor"]["enabled"] is False


def test_job_policy_values_become_the_operators_allow_and_deny_lists(helm: str) -> None:
    from dataflow_engine.compiler.policy import DEFAULT_DENIED_MODULES

    default = _operator_args(_container(_render(helm)))
    assert (default.allowed_images, default.allowed_service_accounts) == ([], [])
    assert set(default.denied_modules.split(",")) == DEFAULT_DENIED_MODULES
    args = _operator_args(_container(_render(
        helm, "jobPolicy.allowedImages={registry.example/a/,registry.example/b/}",
        "jobPolicy.allowedServiceAccounts={etl}", "jobPolicy.deniedModules={os,mypkg}")))
    assert args.allowed_images == ["registry.example/a/", "registry.example/b/"]
    assert args.allowed_service_accounts == ["etl"]
    assert args.denied_modules == "os,mypkg"


# -- scope and admission policies ----------------------------------------------------------------


def test_rbac_is_scoped_to_the_watched_namespaces_by_default(helm: str) -> None:
    objects = _render(helm)
    assert not [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    roles = [o for o in objects if o["kind"] == "Role"
             and "leader-election" not in o["metadata"]["name"]]
    assert [r["metadata"]["namespace"] for r in roles] == ["default"]
    args = _operator_args(_container(objects))
    assert (args.all_namespaces, args.namespaces) == (False, ["default"])


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease",
                                       NAMESPACE])
def test_a_protected_namespace_is_refused_with_a_message(helm: str, namespace: str) -> None:
    refused = _helm(helm, "template", RELEASE, str(CHART), "--namespace", NAMESPACE,
                    "--set", f"watchNamespaces={{team-a,{namespace}}}", check=False)
    assert refused.returncode != 0
    assert f'watchNamespaces: "{namespace}" is not for DataflowJobs' in refused.stderr


def test_no_namespace_and_no_cluster_wide_opt_in_is_refused(helm: str) -> None:
    refused = _helm(helm, "template", RELEASE, str(CHART), "--set", "watchNamespaces=null",
                    check=False)
    assert refused.returncode != 0 and "clusterWide=true" in refused.stderr


def test_the_admission_policies_are_bound_and_denying(helm: str) -> None:
    objects = _render(helm, "executorImage=registry.example/dataflow:1",
                      "jobPolicy.allowedImages={registry.example/team/}")
    policies = {o["metadata"]["name"]: o for o in objects
                if o["kind"] == "ValidatingAdmissionPolicy"}
    bindings = {o["spec"]["policyName"]: o for o in objects
                if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    names = {f"{FULLNAME}-jobs", f"{FULLNAME}-snapshots", f"{FULLNAME}-driver-pods",
             f"{FULLNAME}-operator-scope"}
    assert set(policies) == set(bindings) == names
    assert all(b["spec"]["validationActions"] == ["Deny"] for b in bindings.values())
    assert all(p["spec"]["failurePolicy"] == "Fail" for p in policies.values())
    drivers = policies[f"{FULLNAME}-driver-pods"]
    assert "':dataflow-driver-'" in drivers["spec"]["matchConditions"][0]["expression"]
    images = " ".join(v["expression"] for v in drivers["spec"]["validations"])
    assert '"registry.example/dataflow:1"' in images and '"registry.example/team/"' in images
    scope = policies[f"{FULLNAME}-operator-scope"]
    assert scope["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0][
        "values"] == ["kube-system", "kube-public", "kube-node-lease", NAMESPACE]
    assert f"system:serviceaccount:{NAMESPACE}:{FULLNAME}" in scope["spec"]["matchConditions"][
        0]["expression"]
    # The control-plane rules go when the admin allows control-plane placement.
    allowed = _render(helm, "jobPolicy.allowControlPlane=true")
    rules = [v["message"] for o in allowed if o["kind"] == "ValidatingAdmissionPolicy"
             for v in o["spec"]["validations"] if "message" in v]
    assert not [m for m in rules if "control-plane" in m]
    assert _operator_args(_container(allowed)).allow_control_plane


def test_the_policies_check_against_the_engines_own_lists() -> None:
    from dataflow_operator.admission import CHART_FILE, job_policy_json

    assert (CHART / CHART_FILE).read_text() == job_policy_json(), (
        f"run: dataflow job-policy > helm/dataflow-operator/{CHART_FILE}")
