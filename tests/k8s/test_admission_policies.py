"""The trust boundary on a real API server. The chart's admission policies: hostile DataflowJobs
and hostile pods of a driver's account are refused by the API server itself, with the policy's
message, whatever the operator does; what a job may do is admitted (every request a server-side
dry run, so nothing is created anywhere). RBAC: the operator's and a driver's accounts may do
what docs/security.md says, and nothing more."""

from __future__ import annotations

import contextlib
import copy
import functools
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.plan import build_plan
from dataflow_operator.resources import rbac
from dataflow_operator.resources.driver import executor_pod_template, spark_conf
from dataflow_operator.resources.meta import JobRef
from kube_helpers import REPO_ROOT, Kube, wait_until
from operator_helpers import job_manifest, render_chart

pytestmark = pytest.mark.k8s

RELEASE, RELEASE_NAMESPACE = "df-admission", "dataflow-admission"
OPERATOR_ACCOUNT = "df-admission-dataflow-operator"
IMAGE = "dataflow-operator:admission-test"
TEST_LABEL = "dataflow.io/admission-test"
#: The label as a key of `helm --set`, whose dots would otherwise nest.
TEST_LABEL_KEY = TEST_LABEL.replace(".", "\\.")
AUTHOR = "alice"


def _render(helm: str, selector: str, *sets: str) -> list[dict[str, Any]]:
    return render_chart(helm, RELEASE, RELEASE_NAMESPACE, f"executorImage={IMAGE}",
                        f"admissionPolicies.namespaceSelector.matchLabels.{TEST_LABEL_KEY}="
                        f"{selector}", *sets)


@contextlib.contextmanager
def _applied(kube: Kube, objects: list[dict[str, Any]]) -> Iterator[None]:
    """Cluster-scoped objects, deleted afterwards."""
    kube.apply(*objects)
    try:
        yield
    finally:
        for obj in objects:
            kube.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"],
                         "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def policies(kube: Kube, helm: str, crd: None) -> Iterator[str]:
    """The chart's policies, bound to namespaces labelled with this module's selector."""
    # A letter first: helm --set reads a value of digits alone (or 1e5...) as a number, which
    # a label selector refuses.
    selector = f"s{secrets.token_hex(4)}"
    with _applied(kube, [o for o in _render(helm, selector)
                         if o["kind"].startswith("ValidatingAdmissionPolicy")]):
        yield selector


@pytest.fixture
def guarded(kube: Kube, namespace: str, policies: str) -> str:
    """The test's namespace under the policies, with a job author who may manage
    DataflowJobs there and nothing else; returns the namespace once the policies refuse."""
    kube.kubectl("label", "namespace", namespace, f"{TEST_LABEL}={policies}")
    kube.kubectl("create", "role", "author", "--verb=get,list,create,update,patch,delete",
                 "--resource=dataflowjobs.dataflow.io", "--namespace", namespace)
    kube.kubectl("create", "rolebinding", "author", "--role=author", f"--user={AUTHOR}",
                 "--namespace", namespace)
    probe = job_manifest("probe", sparkConf={"spark.master": "local"})
    wait_until("the admission policies to take effect",
               lambda: "set by the operator" in _dry_run(kube, namespace, probe), timeout=60)
    return namespace


def _dry_run(kube: Kube, namespace: str, obj: dict[str, Any], user: str | None = None) -> str:
    """A server-side dry-run create: '' when admitted, else the API server's refusal."""
    return kube.dry_run_create(obj, namespace, user)


def _template(role: str, spec: dict[str, Any], metadata: dict[str, Any] | None = None,
              containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pod_spec = dict(spec)
    if containers is not None:
        pod_spec["containers"] = containers
    return {"podTemplate": {role: {"metadata": metadata or {}, "spec": pod_spec}}}


#: name -> (spec changes, a part of the policy's message).
HOSTILE_JOBS: dict[str, tuple[dict[str, Any], str]] = {
    "key-with-separator": ({"sparkConf": {"spark.kubernetes.namespace=": "victim"}},
                           "spec.sparkConf[spark.kubernetes.namespace=]"),
    "key-with-colon": ({"sparkConf": {"spark.kubernetes.executor.podNamePrefix:": "x"}},
                       "spec.sparkConf[spark.kubernetes.executor.podNamePrefix:]"),
    "value-with-newline": ({"sparkConf": {
        "spark.sql.shuffle.partitions": "1\nspark.kubernetes.namespace victim"}},
        "may not contain control characters"),
    "owned-key": ({"sparkConf": {"spark.kubernetes.namespace": "victim"}},
                  "spec.sparkConf[spark.kubernetes.namespace]: set by the operator"),
    "owned-key-other-case": ({"sparkConf": {"spark.Kubernetes.Namespace": "victim"}},
                             "set by the operator"),
    "template-file": ({"sparkConf": {
        "spark.kubernetes.executor.podTemplateFile": "/opt/dataflow/pyfiles/0/t.yaml"}},
        "set by the operator"),
    "executor-account": ({"sparkConf": {
        "spark.kubernetes.authenticate.executor.serviceAccountName": "victim-admin"}},
        "set by the operator"),
    "control-plane-selector": ({"sparkConf": {
        "spark.kubernetes.node.selector.node-role.kubernetes.io/control-plane": ""}},
        "control-plane"),
    "own-image": ({"image": "registry.example/evil:1"}, "spec.image"),
    "template-namespace": (_template("driver", {}, {"namespace": "victim"}),
                           "set by the operator"),
    "template-account": (_template("executor", {"serviceAccountName": "victim-admin"}),
                         "service account"),
    "template-token": (_template("executor", {"automountServiceAccountToken": True}),
                       "service account"),
    "template-node": (_template("driver", {"nodeName": "control-plane-0"}), "node"),
    "host-network": (_template("driver", {"hostNetwork": True}), "hostNetwork"),
    "secret-volume": (_template("executor", {"volumes": [
        {"name": "s", "secret": {"secretName": "db"}}]}), "Secrets"),
    "host-path": (_template("executor", {"volumes": [
        {"name": "h", "hostPath": {"path": "/"}}]}), "host paths"),
    "token-projection": (_template("driver", {"volumes": [{"name": "t", "projected": {
        "sources": [{"serviceAccountToken": {"path": "t"}}]}}]}), "tokens"),
    "null-pod-context": (_template("driver", {"securityContext": None}), "null is not allowed"),
    "null-container-context": (_template("executor", {}, containers=[
        {"name": "executor", "securityContext": None}]), "null is not allowed"),
    "driver-command": (_template("driver", {}, containers=[
        {"name": "driver", "command": ["/bin/sh", "-c", "id"]}]), "command"),
    "executor-lifecycle": (_template("executor", {}, containers=[
        {"name": "executor", "lifecycle": {"postStart": {"exec": {"command": ["id"]}}}}]),
        "lifecycle"),
    "privileged": (_template("driver", {}, containers=[
        {"name": "driver", "securityContext": {"privileged": True}}]), "privileged"),
    "container-image": (_template("executor", {}, containers=[
        {"name": "executor", "image": "evil:1"}]), "images are set by the operator"),
    "every-taint": (_template("executor", {"tolerations": [{"operator": "Exists"}]}),
                    "tolerating every taint"),
    "control-plane-node": (_template("driver", {"nodeSelector": {
        "node-role.kubernetes.io/control-plane": ""}}), "control-plane"),
}


def test_hostile_jobs_are_refused_by_the_api_server_with_the_policys_message(
        kube: Kube, guarded: str) -> None:
    refused = []
    for name, (change, message) in HOSTILE_JOBS.items():
        answer = _dry_run(kube, guarded, job_manifest(name, **copy.deepcopy(change)), AUTHOR)
        assert "ValidatingAdmissionPolicy" in answer and message in answer, (name, answer)
        refused.append(name)
    print(f"\n{len(refused)} hostile DataflowJobs refused by the API server's admission policy")
    assert _dry_run(kube, guarded, job_manifest("fine", sparkConf={
        "spark.sql.shuffle.partitions": "4",
        "spark.kubernetes.executor.label.app.kubernetes.io/part-of": "etl"},
        podTemplate={"executor": {"spec": {"nodeSelector": {"disk": "ssd"}}}}), AUTHOR) == ""
    assert (kube.get("dataflowjobs", "--namespace", guarded) or {}).get("items") == []


def test_only_the_operator_labels_the_snapshots_its_retention_deletes(
        kube: Kube, guarded: str) -> None:
    kube.kubectl("create", "role", "snapshots", "--verb=create",
                 "--resource=dataflowsnapshots.dataflow.io", "--namespace", guarded)
    kube.kubectl("create", "rolebinding", "snapshots", "--role=snapshots", f"--user={AUTHOR}",
                 "--namespace", guarded)
    snapshot = {"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowSnapshot",
                "metadata": {"name": "mine"},
                "spec": {"jobReference": {"name": "probe"}, "savepoint": {}}}
    wait_until("the author's right to create snapshots",
               lambda: _dry_run(kube, guarded, snapshot, AUTHOR) == "", timeout=30)
    labelled = {**snapshot, "metadata": {"name": "fake", "labels": {
        "dataflow.io/snapshot-trigger": "periodic"}}}
    assert "is set by the operator only" in _dry_run(kube, guarded, labelled, AUTHOR)
    assert _dry_run(kube, guarded, labelled) == ""  # a cluster admin (system:masters)


def test_jobs_are_not_admitted_in_protected_namespaces(kube: Kube, policies: str) -> None:
    # The jobs policy is bound to labelled namespaces here; kube-public gets the label for the
    # test's length only.
    kube.kubectl("label", "namespace", "kube-public", f"{TEST_LABEL}={policies}")
    try:
        answer = _dry_run(kube, "kube-public", job_manifest("anywhere"))
        assert "do not run in kube-system, kube-public" in answer, answer
    finally:
        kube.kubectl("label", "namespace", "kube-public", f"{TEST_LABEL}-")


def test_another_account_needs_the_authors_right_to_create_pods(
        kube: Kube, guarded: str) -> None:
    job = job_manifest("as-other", serviceAccountName="etl-runner")
    answer = _dry_run(kube, guarded, job, AUTHOR)
    assert f"running a job as etl-runner needs the right to create pods in {guarded}" in answer
    kube.kubectl("create", "role", "pods", "--verb=create", "--resource=pods",
                 "--namespace", guarded)
    kube.kubectl("create", "rolebinding", "pods", "--role=pods", f"--user={AUTHOR}",
                 "--namespace", guarded)
    wait_until("the author's new right", lambda: _dry_run(kube, guarded, job, AUTHOR) == "",
               timeout=30)


def test_a_secret_reference_needs_the_authors_right_to_read_it(
        kube: Kube, guarded: str) -> None:
    kube.kubectl("create", "secret", "generic", "kafka-creds", "--from-literal=password=pw",
                 "--namespace", guarded)
    job = job_manifest("with-secret", pipeline=[
        {"name": "src", "type": "kafka", "args": {
            "bootstrapServers": "kafka:9092", "topics": ["in"],
            "properties": {"security.protocol": "SASL_PLAINTEXT",
                           "sasl.password": {"secretKeyRef": {"name": "kafka-creds",
                                                              "key": "password"}}}}},
        {"name": "out", "type": "discard", "inputs": ["src"]}])
    answer = _dry_run(kube, guarded, job, AUTHOR)
    assert f"{AUTHOR} may not read every Secret" in answer and "src" in answer, answer
    kube.kubectl("create", "role", "read-creds", "--verb=get", "--resource=secrets",
                 "--resource-name=kafka-creds", "--namespace", guarded)
    kube.kubectl("create", "rolebinding", "read-creds", "--role=read-creds", f"--user={AUTHOR}",
                 "--namespace", guarded)
    wait_until("the author's right to read the Secret",
               lambda: _dry_run(kube, guarded, job, AUTHOR) == "", timeout=30)


# -- pods of a driver's account ------------------------------------------------------------------


def _executor_pod(job: JobRef, **changes: Any) -> dict[str, Any]:
    """An executor pod as Spark's driver makes it from the operator's template and settings."""
    model = DataflowJobSpec.model_validate(job_manifest(job.name)["spec"])
    conf = spark_conf(job, model, build_plan(job.name, job.namespace, model).compiled.slot_plan,
                      IMAGE)
    pod = executor_pod_template(job, model)
    pod["metadata"].update(name=f"{job.name}-exec-1", ownerReferences=[{
        "apiVersion": "v1", "kind": "Pod", "name": job.driver_pod, "uid": "0" * 8 + "-1111",
        "controller": True}])
    pod["spec"]["serviceAccountName"] = conf[
        "spark.kubernetes.authenticate.executor.serviceAccountName"]
    container = pod["spec"]["containers"][0]
    container.update(image=IMAGE, args=["executor"])
    for path, value in changes.items():
        target = pod
        *parents, last = path.split(".")
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return pod


@pytest.fixture
def driver(kube: Kube, guarded: str) -> JobRef:
    """Two jobs' accounts, each driver's with the Role the operator gives it (without the
    owner reference to a job that does not exist, which the garbage collector would follow);
    returns the first job."""
    jobs = [JobRef("etl", guarded, "uid-1"), JobRef("other", guarded, "uid-2")]
    objects = [obj for job in jobs for obj in (
        rbac.service_account(job), rbac.executor_service_account(job), rbac.role(job),
        rbac.role_binding(job))]
    for obj in objects:
        del obj["metadata"]["ownerReferences"]
    kube.apply(*objects, namespace=guarded)
    return jobs[0]


def test_a_drivers_account_may_create_its_executors_and_nothing_else(
        kube: Kube, guarded: str, driver: JobRef) -> None:
    account = f"system:serviceaccount:{guarded}:{driver.driver_account}"
    assert _dry_run(kube, guarded, _executor_pod(driver), account) == ""
    other = JobRef("other", guarded, "uid-2")
    hostile: dict[str, tuple[dict[str, Any], str]] = {
        "another job's pod": (_executor_pod(other), "may only create, change or delete pods of"),
        "not an executor": (_executor_pod(driver, **{
            "metadata.labels": {"dataflow.io/job": "etl", "dataflow.io/role": "driver"}}),
            "executor pods"),
        "no owner": (_executor_pod(driver, **{"metadata.ownerReferences": None}),
                     "owned by the driver pod"),
        "another account": (_executor_pod(driver, **{"spec.serviceAccountName": "default"}),
                            "executor pods run as dataflow-executor-etl"),
        "a token": (_executor_pod(driver, **{"spec.automountServiceAccountToken": True}),
                    "automountServiceAccountToken: false"),
        "another image": (_executor_pod(driver, **{"spec.containers.0.image": "evil:1"}),
                          "operator's image"),
        "a Secret volume": (_executor_pod(driver, **{"spec.volumes": [
            {"name": "s", "secret": {"secretName": "kafka-creds"}}]}), "mount no Secret"),
        "a token volume": (_executor_pod(driver, **{"spec.volumes": [{"name": "t", "projected": {
            "sources": [{"serviceAccountToken": {"path": "t"}}]}}]}), "mount no Secret"),
        "a Secret variable": (_executor_pod(driver, **{"spec.containers.0.env": [
            {"name": "P", "valueFrom": {"secretKeyRef": {"name": "kafka-creds",
                                                         "key": "password"}}}]}),
            "no Secret into their environment"),
        "privileged": (_executor_pod(driver, **{
            "spec.containers.0.securityContext.allowPrivilegeEscalation": None,
            "spec.containers.0.securityContext.privileged": True}), "restricted"),
        "as root": (_executor_pod(driver, **{
            "spec.containers.0.securityContext.runAsNonRoot": None,
            "spec.securityContext.runAsNonRoot": None,
            "spec.securityContext.runAsUser": 0}), "restricted"),
        "host network": (_executor_pod(driver, **{"spec.hostNetwork": True}), "restricted"),
        "a node of its choosing": (_executor_pod(driver, **{"spec.nodeName": "cp-0"}),
                                   "restricted"),
        "every taint": (_executor_pod(driver, **{"spec.tolerations": [{"operator": "Exists"}]}),
                        "tolerate every taint"),
    }
    for what, (pod, message) in hostile.items():
        answer = _dry_run(kube, guarded, pod, account)
        assert "ValidatingAdmissionPolicy" in answer and message in answer, (what, answer)
    print(f"\n{len(hostile)} hostile pods of a driver's account refused by the API server")
    # RBAC: nothing but pods.
    for resource in ("configmaps", "secrets", "serviceaccounts", "rolebindings"):
        assert not kube.can_i("create", resource, account=account, namespace=guarded), resource


def test_a_driver_may_delete_only_its_own_jobs_pods(
        kube: Kube, guarded: str, driver: JobRef) -> None:
    other = JobRef("other", guarded, "uid-2")
    kube.apply(_executor_pod(other, **{"metadata.ownerReferences": None}), namespace=guarded)
    kube.apply(_executor_pod(driver, **{"metadata.ownerReferences": None}), namespace=guarded)
    account = f"system:serviceaccount:{guarded}:{driver.driver_account}"
    refused = kube.kubectl("delete", "pod", "other-exec-1", "--namespace", guarded,
                           "--dry-run=server", f"--as={account}", check=False)
    assert "may only create, change or delete pods of its own job" in refused.stderr
    kube.kubectl("delete", "pod", "etl-exec-1", "--namespace", guarded, "--dry-run=server",
                 f"--as={account}")


# -- RBAC: what each account may do, as documented -----------------------------------------------

#: The documented matrix: docs/security.md, the table under this heading.
MATRIX_HEADING = "### What each account may do"


def _documented_matrix() -> dict[tuple[str, str], dict[str, set[str]]]:
    """(account, where) -> resource -> verbs, from the table in docs/security.md."""
    text = (REPO_ROOT / "docs" / "security.md").read_text()
    table = text.split(MATRIX_HEADING, 1)[1].split("\n\n", 2)[1]
    matrix: dict[tuple[str, str], dict[str, set[str]]] = {}
    for row in table.splitlines()[2:]:
        account, where, resource, verbs = (cell.strip(" `") for cell in row.strip("|").split("|"))
        granted = matrix.setdefault((account, where), {})
        if resource != "nothing":
            granted[resource] = set(verbs.split())
    return matrix


def _can_i_list(kube: Kube, account: str, namespace: str) -> dict[str, set[str]]:
    """`kubectl auth can-i --list` of `account` in `namespace`: its resource rules, less what
    every authenticated user may do (the self-reviews, the discovery URLs)."""
    out = kube.kubectl("auth", "can-i", "--list", f"--as={account}", "--namespace",
                       namespace).stdout
    print(f"\n$ kubectl auth can-i --list --as={account} --namespace {namespace}\n{out}")
    granted = {}
    for line in out.splitlines()[1:]:
        resource, urls, _names, verbs = line.split(None, 3) if not line.startswith(" ") else (
            "", "", "", "")
        if resource and urls == "[]" and not resource.startswith("selfsubject"):
            granted[resource] = set(verbs.strip("[]").split())
    return granted


def test_the_can_i_matrix_is_the_documented_one(
        kube: Kube, helm: str, namespace: str, driver: JobRef) -> None:
    """The chart's operator account (watching the test's namespace) and a job's driver account
    may do exactly what docs/security.md says, where it says, and nothing elsewhere."""
    rbac_objects = [o for o in _render(helm, "none", f"watchNamespaces={{{namespace}}}",
                                       "leaderElection.enabled=false", "replicaCount=1")
                    if o["kind"] in ("Role", "RoleBinding")]
    kube.apply(*rbac_objects)
    operator = f"system:serviceaccount:{RELEASE_NAMESPACE}:{OPERATOR_ACCOUNT}"
    driver_account = f"system:serviceaccount:{namespace}:{driver.driver_account}"
    executor_account = f"system:serviceaccount:{namespace}:{driver.executor_account}"
    found = {
        ("operator", "a watched namespace"): _can_i_list(kube, operator, namespace),
        ("operator", "any other namespace"): _can_i_list(kube, operator, "default"),
        ("driver", "its job's namespace"): _can_i_list(kube, driver_account, namespace),
        ("driver", "any other namespace"): _can_i_list(kube, driver_account, "default"),
        ("executor", "anywhere"): _can_i_list(kube, executor_account, namespace),
    }
    assert found == _documented_matrix()


def _past_rbac(kube: Kube, namespace: str, obj: dict[str, Any], user: str) -> str | None:
    """The refusal of a dry-run create once RBAC allows it (a new binding takes a moment)."""
    answer = _dry_run(kube, namespace, obj, user)
    return None if "cannot create" in answer else answer


def test_the_operators_account_writes_nothing_in_protected_namespaces(
        kube: Kube, helm: str, namespace: str, policies: str) -> None:
    """Even cluster-wide (clusterWide=true: a ClusterRole), so the policy, not RBAC, refuses."""
    account = f"system:serviceaccount:{RELEASE_NAMESPACE}:{OPERATOR_ACCOUNT}"
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}
    cluster_rbac = [o for o in _render(helm, policies, "clusterWide=true")
                    if o["kind"].startswith("ClusterRole")]
    with _applied(kube, cluster_rbac):
        for protected in ("kube-system", "kube-public", "kube-node-lease"):
            answer = wait_until(f"the ClusterRole's effect in {protected}",
                                functools.partial(_past_rbac, kube, protected, config, account),
                                timeout=30)
            assert f"does not write to namespace {protected}" in answer, answer
        # The ClusterRole is what lets it write elsewhere.
        assert _dry_run(kube, namespace, config, account) == ""
