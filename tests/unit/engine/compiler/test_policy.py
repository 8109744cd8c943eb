"""What a job's author may not ask for: each hostile setting refused with its field path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dataflow_engine.compiler.policy import STRICT, JobPolicy, policy_problems
from dataflow_engine.spec.model import DataflowJobSpec

pytestmark = pytest.mark.unit

PIPELINE = [
    {"name": "src", "type": "sequence", "args": {"from": 1, "to": 3}},
    {"name": "m", "type": "map", "function": "square", "inputs": ["src"]},
    {"name": "out", "type": "discard", "inputs": ["m"]},
]


def _spec(**fields: Any) -> DataflowJobSpec:
    return DataflowJobSpec.model_validate({"pipeline": PIPELINE, **fields})


def _paths(spec: DataflowJobSpec, policy: JobPolicy = STRICT) -> list[str]:
    return [p.path for p in policy_problems(spec, policy)]


def _driver(template: dict[str, Any]) -> DataflowJobSpec:
    return _spec(podTemplate={"driver": template})


def test_a_template_cannot_move_the_pod_or_change_its_identity() -> None:
    hostile = _driver({"metadata": {"namespace": "victim", "name": "x", "ownerReferences": [],
                                    "labels": {"dataflow.io/job": "other", "team": "a"}},
                       "spec": {"serviceAccountName": "victim-admin", "serviceAccount": "a",
                                "automountServiceAccountToken": True, "nodeName": "n1"}})
    at = "spec.podTemplate.driver"
    assert sorted(_paths(hostile)) == sorted([
        f"{at}.metadata.name", f"{at}.metadata.namespace", f"{at}.metadata.ownerReferences",
        f"{at}.metadata.labels.dataflow.io/job", f"{at}.spec.serviceAccountName",
        f"{at}.spec.serviceAccount", f"{at}.spec.automountServiceAccountToken",
        f"{at}.spec.nodeName"])


def test_a_template_cannot_mount_or_read_credentials() -> None:
    hostile = _spec(podTemplate={"executor": {"spec": {
        "volumes": [{"name": "s", "secret": {"secretName": "db"}},
                    {"name": "t", "projected": {"sources": [
                        {"serviceAccountToken": {"path": "token"}},
                        {"configMap": {"name": "fine"}}]}}],
        "containers": [{"name": "executor", "image": "evil:1",
                        "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db",
                                                                              "key": "p"}}}],
                        "envFrom": [{"secretRef": {"name": "db"}}]}]}}})
    at = "spec.podTemplate.executor.spec"
    assert sorted(_paths(hostile)) == sorted([
        f"{at}.volumes[0].secret", f"{at}.volumes[1].projected.sources[0].serviceAccountToken",
        f"{at}.containers[0].image", f"{at}.containers[0].env[0].valueFrom.secretKeyRef",
        f"{at}.containers[0].envFrom[0].secretRef"])


@pytest.mark.parametrize(("template", "path"), [
    ({"containers": [{"name": "driver", "securityContext": {"capabilities": {"drop": []}}}]},
     "containers[0].securityContext.capabilities.drop"),
    ({"containers": [{"name": "driver", "securityContext": {
        "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}}]},
     "containers[0].securityContext.capabilities.add"),
    ({"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
     "securityContext.seccompProfile.type"),
    ({"containers": [{"name": "driver",
                      "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]},
     "containers[0].securityContext.seccompProfile.type"),
    ({"containers": [{"name": "driver", "ports": [{"containerPort": 80, "hostPort": 80}]}]},
     "containers[0].ports[0].hostPort"),
    ({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}},
     "securityContext.sysctls[0].name"),
    ({"volumes": [{"name": "n", "nfs": {"server": "10.0.0.9", "path": "/"}}]},
     "volumes[0].nfs"),
    ({"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, "volumes[0].hostPath"),
    ({"hostNetwork": True}, "hostNetwork"),
    ({"hostPID": True}, "hostPID"),
    ({"securityContext": {"runAsUser": 0}}, "securityContext.runAsUser"),
    ({"securityContext": {"runAsNonRoot": False}}, "securityContext.runAsNonRoot"),
    ({"initContainers": [{"name": "i", "securityContext": {"privileged": True}}]},
     "initContainers[0].securityContext.privileged"),
    ({"containers": [{"name": "driver",
                      "securityContext": {"allowPrivilegeEscalation": True}}]},
     "containers[0].securityContext.allowPrivilegeEscalation"),
    ({"containers": [{"name": "driver", "securityContext": {"procMount": "Unmasked"}}]},
     "containers[0].securityContext.procMount"),
    ({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}},
     "securityContext.seLinuxOptions.type"),
    ({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}},
     "securityContext.appArmorProfile.type"),
])
def test_every_baseline_and_restricted_rule_is_checked(template: dict[str, Any],
                                                       path: str) -> None:
    assert _paths(_driver({"spec": template})) == [f"spec.podTemplate.driver.spec.{path}"]


def test_what_restricted_allows_passes() -> None:
    fine = _driver({"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                    "spec": {"nodeSelector": {"disk": "ssd"}, "tolerations": [],
                             "securityContext": {"sysctls": [
                                 {"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]},
                             "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}},
                                         {"name": "c", "configMap": {"name": "fns"}},
                                         {"name": "e", "emptyDir": {}}],
                             "initContainers": [{"name": "prepare", "command": ["/bin/sh"]}],
                             "containers": [{"name": "driver",
                                             "env": [{"name": "A", "value": "1"}],
                                             "securityContext": {"capabilities": {
                                                 "drop": ["ALL"],
                                                 "add": ["NET_BIND_SERVICE"]}},
                                             "volumeMounts": [{"name": "d",
                                                               "mountPath": "/data"}]}]}})
    assert _paths(fine) == []


def test_spark_settings_that_decide_where_and_as_whom_are_refused() -> None:
    hostile = _spec(sparkConf={
        "spark.master": "local[*]",
        "spark.kubernetes.namespace": "victim",
        "spark.kubernetes.authenticate.driver.serviceAccountName": "victim-admin",
        "spark.kubernetes.driver.pod.name": "someone-else",
        "spark.kubernetes.executor.podTemplateFile": "/tmp/t.yaml",
        "spark.kubernetes.executor.volumes.hostPath.root.mount.path": "/host",
        "spark.kubernetes.executor.secrets.db": "/secrets",
        "spark.kubernetes.executor.label.dataflow.io/job": "other",
        "spark.kubernetes.container.image": "evil:1",
        "spark.sql.shuffle.partitions": "4",
        "spark.kubernetes.executor.label.team": "a",
    })
    refused = {p.split("[", 1)[1].rstrip("]") for p in _paths(hostile)}
    assert refused == {
        "spark.master", "spark.kubernetes.namespace",
        "spark.kubernetes.authenticate.driver.serviceAccountName",
        "spark.kubernetes.driver.pod.name", "spark.kubernetes.executor.podTemplateFile",
        "spark.kubernetes.executor.volumes.hostPath.root.mount.path",
        "spark.kubernetes.executor.secrets.db", "spark.kubernetes.executor.label.dataflow.io/job",
        "spark.kubernetes.container.image"}


def test_images_only_from_the_operators_allowed_prefixes() -> None:
    spec = _spec(image="registry.example/team/job:1",
                 sparkConf={"spark.kubernetes.executor.container.image": "registry.example/x:2"})
    assert _paths(spec) == ["spec.image",
                            "spec.sparkConf[spark.kubernetes.executor.container.image]"]
    allowed = JobPolicy(allowed_images=("registry.example/",))
    assert _paths(spec, allowed) == []
    assert _paths(_spec(image="elsewhere/job:1"), allowed) == ["spec.image"]


@pytest.mark.parametrize("reference", ["os:system", "os.path:join", "subprocess:call",
                                       "builtins:eval", "importlib:import_module", "pty:spawn",
                                       "shutil:rmtree", "socket:create_connection",
                                       # run code given as a string argument
                                       "cProfile:run", "profile:run", "timeit:timeit",
                                       "yaml:unsafe_load", "yaml:load", "doctest:testmod"])
def test_functions_of_denied_modules_are_refused(reference: str) -> None:
    pipeline = [{**step} for step in PIPELINE]
    pipeline[1]["function"] = reference
    problems = policy_problems(DataflowJobSpec.model_validate({"pipeline": pipeline}), STRICT)
    assert [p.path for p in problems] == ["spec.pipeline[1].function"]
    assert "operator 'm'" in problems[0].message and reference in problems[0].message


def test_key_selectors_are_checked_too_and_the_list_is_configurable() -> None:
    pipeline = [*PIPELINE[:2],
                {"name": "k", "type": "reduce", "function": "mypkg.fns:add",
                 "inputs": [{"from": "m", "keyBy": "os:getcwd"}]},
                {"name": "out", "type": "discard", "inputs": ["k"]}]
    spec = DataflowJobSpec.model_validate({"pipeline": pipeline})
    assert _paths(spec) == ["spec.pipeline[2].inputs[0].keyBy"]
    assert _paths(spec, JobPolicy(denied_modules=frozenset({"mypkg"}))) == [
        "spec.pipeline[2].function"]
    assert _paths(spec, JobPolicy(denied_modules=frozenset())) == []


def test_dataflow_compile_runs_the_same_checks(tmp_path: Path) -> None:
    manifest = {"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
                "metadata": {"name": "hostile"},
                "spec": {"pipeline": PIPELINE, "podTemplate": {"driver": {"spec": {
                    "serviceAccountName": "victim-admin"}}}}}
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = subprocess.run([sys.executable, "-m", "dataflow_engine.cli", "compile", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "spec.podTemplate.driver.spec.serviceAccountName" in result.stderr + result.stdout


def test_local_drivers_inherit_no_credentials(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    from dataflow_operator.backends.local import driver_environment

    monkeypatch.setenv("KUBECONFIG", "/root/.kube/config")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dinherited=1")
    env = driver_environment(tmp_path)
    assert "KUBECONFIG" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["HOME"] == str(tmp_path) and env["PATH"] == "/usr/bin"
    assert "SPARK_CONF_DIR" not in env  # the job's Spark settings are a file it is given
    # JVM options are the operator's setting, not whatever its environment holds.
    assert "SPARK_SUBMIT_OPTS" not in env
    jvm = driver_environment(tmp_path, "-XX:TieredStopAtLevel=1")
    assert jvm["SPARK_SUBMIT_OPTS"] == "-XX:TieredStopAtLevel=1"


def test_a_service_account_only_from_the_operators_allow_list() -> None:
    spec = _spec(serviceAccountName="etl-runner")
    assert _paths(spec) == ["spec.serviceAccountName"]
    assert _paths(spec, JobPolicy(allowed_service_accounts=frozenset({"etl-runner"}))) == []


def test_an_allowed_account_runs_the_driver_and_gets_the_jobs_role() -> None:
    from dataflow_operator.plan import build_plan
    from dataflow_operator.resources import rbac
    from dataflow_operator.resources.driver import driver_pod
    from dataflow_operator.resources.meta import JobRef

    spec = _spec(serviceAccountName="etl-runner")
    policy = JobPolicy(allowed_service_accounts=frozenset({"etl-runner"}))
    plan = build_plan("wc", "team-a", spec, policy)
    job = JobRef("wc", "team-a", "uid-1")
    pod = driver_pod(job, spec, "img:1", plan.status.hash, 0)
    assert pod["spec"]["serviceAccountName"] == "etl-runner"
    assert rbac.role_binding(job, spec.service_account_name)["subjects"] == [
        {"kind": "ServiceAccount", "name": "etl-runner", "namespace": "team-a"}]
    assert driver_pod(job, _spec(), "img:1", "h", 0)["spec"]["serviceAccountName"] == (
        "dataflow-driver-wc")


def test_a_job_too_big_for_the_operator_is_refused_before_its_graph_is_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dataflow_engine.compiler import compile as compiler
    from dataflow_engine.errors import SpecError
    from dataflow_operator.plan import build_plan

    maps = [{"name": f"m{i}", "type": "map", "function": "identity",
             "inputs": [f"m{i - 1}" if i else "src"]} for i in range(400)]
    spec = DataflowJobSpec.model_validate({
        "parallelism": 1500, "maxParallelism": 2048, "chaining": False,
        "pipeline": [PIPELINE[0], *maps, {"name": "out", "type": "discard",
                                          "inputs": ["m399"]}]})
    built = compiler.build_execution_graph

    def never(*args: Any) -> Any:
        raise AssertionError("the ExecutionGraph of a refused job was built")

    monkeypatch.setattr(compiler, "build_execution_graph", never)
    with pytest.raises(SpecError) as error:
        build_plan("big", "ns", spec)
    assert [p.path for p in error.value.problems] == ["spec.parallelism"]
    assert "603000 ExecutionVertices" in str(error.value)
    monkeypatch.setattr(compiler, "build_execution_graph", built)
    plan = build_plan("big", "ns", spec, JobPolicy(max_execution_vertices=1_000_000,
                                                   max_operators=1000))
    assert plan.status.num_execution_vertices == 603_000
    too_many = DataflowJobSpec.model_validate({"pipeline": [
        PIPELINE[0], *maps[:3], {"name": "out", "type": "discard", "inputs": ["m2"]}]})
    assert _paths(too_many, JobPolicy(max_operators=4)) == ["spec.pipeline"]


def test_an_oversize_spec_is_refused_with_its_size() -> None:
    pipeline = [{"name": "src", "type": "collection",
                 "args": {"elements": ["x" * 1000] * 200}}, PIPELINE[2] | {"inputs": ["src"]}]
    problems = policy_problems(DataflowJobSpec.model_validate({"pipeline": pipeline}), STRICT)
    assert [p.path for p in problems] == ["spec"]
    assert problems[0].message.startswith("the spec is 19")
    assert "KiB; the operator allows at most 128 KiB" in problems[0].message


def test_every_label_and_annotation_the_operator_sets_is_owned_by_the_policy() -> None:
    # The policy (engine) cannot import the operator's builders: keep the two lists in step.
    from dataflow_operator.plan import build_plan
    from dataflow_operator.resources.driver import driver_pod
    from dataflow_operator.resources.meta import JobRef

    spec = _spec()
    pod = driver_pod(JobRef("wc", "ns", "uid"), spec, "img:1",
                     build_plan("wc", "ns", spec).status.hash, 0)
    metadata = {"labels": pod["metadata"]["labels"],
                "annotations": pod["metadata"]["annotations"]}
    paths = _paths(_driver({"metadata": metadata}))
    expected = [f"spec.podTemplate.driver.metadata.{kind}.{key}"
                for kind in ("labels", "annotations") for key in metadata[kind]]
    assert sorted(paths) == sorted(expected)


@pytest.mark.parametrize("role", ["driver", "executor"])
def test_the_operators_container_keeps_its_command_environment_and_files(role: str) -> None:
    hostile = _spec(podTemplate={role: {"spec": {
        "containers": [{"name": role, "command": ["/bin/sh"], "args": ["-c", "id"],
                        "lifecycle": {"postStart": {"exec": {"command": ["id"]}}},
                        "workingDir": "/", "env": [{"name": "SPARK_CONF_DIR", "value": "/x"},
                                                   {"name": "MINE", "value": "1"}],
                        "volumeMounts": [{"name": "evil", "mountPath": "/etc/dataflow"},
                                         {"name": "dataflow-plan", "mountPath": "/x"},
                                         {"name": "fine", "mountPath": "/etc/dataflowx"}]}],
        "volumes": [{"name": "dataflow-plan", "configMap": {"name": "mine"}}]}}})
    at = f"spec.podTemplate.{role}.spec"
    assert sorted(_paths(hostile)) == sorted([
        f"{at}.containers[0].command", f"{at}.containers[0].args",
        f"{at}.containers[0].lifecycle", f"{at}.containers[0].workingDir",
        f"{at}.containers[0].env[0].name", f"{at}.containers[0].volumeMounts[0]",
        f"{at}.containers[0].volumeMounts[1]", f"{at}.volumes[0].name"])


def test_an_explicit_null_is_refused_where_it_would_remove_what_the_operator_set() -> None:
    hostile = _driver({"spec": {"securityContext": None, "containers": [
        {"name": "driver", "securityContext": None, "resources": {"limits": None}}]}})
    at = "spec.podTemplate.driver.spec"
    assert sorted(_paths(hostile)) == sorted([
        f"{at}.securityContext", f"{at}.containers[0].securityContext",
        f"{at}.containers[0].resources.limits"])


def test_every_taint_and_the_control_plane_only_when_the_operator_allows_them() -> None:
    hostile = _driver({"spec": {
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "tolerations": [{"operator": "Exists"},
                        {"key": "node-role.kubernetes.io/master", "operator": "Exists",
                         "effect": "NoSchedule"},
                        {"key": "dedicated", "operator": "Equal", "value": "dataflow"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}]}}}}})
    at = "spec.podTemplate.driver.spec"
    assert sorted(_paths(hostile)) == sorted([
        f"{at}.nodeSelector.node-role.kubernetes.io/control-plane", f"{at}.tolerations[0]",
        f"{at}.tolerations[1].key",
        f"{at}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].key"])
    assert _paths(hostile, JobPolicy(allow_control_plane=True)) == []


@pytest.mark.parametrize(("key", "value"), [
    ("spark.kubernetes.namespace=", "victim"),
    ("spark.kubernetes.executor.podTemplateFile=", "/opt/dataflow/pyfiles/0/t.yaml"),
    ("spark.kubernetes.executor.podNamePrefix:", "x"),
    ("spark.kubernetes.namespace victim", ""),
    ("spark.sql.shuffle.partitions", "1\nspark.kubernetes.namespace victim"),
    ("spark.sql.shuffle.partitions", "1\rspark.master local"),
    ("spark.app.name", "a\tb"),
    ("#spark.master", "x"),
    ("Spark.master", "x"),
    ("spark.KUBERNETES.Namespace", "victim"),
    ("spark.kubernetes.executor.label.a b", "x"),
    ("spark.kubernetes.executor.label.dataflow.io/role", "driver"),
    ("spark.kubernetes.driver.annotation.container.apparmor.security.beta.kubernetes.io/driver",
     "unconfined"),
    ("spark.kubernetes.executor.annotation.seccomp.security.alpha.kubernetes.io/pod",
     "unconfined"),
    ("spark.kubernetes.node.selector.node-role.kubernetes.io/control-plane", ""),
    ("spark.kubernetes.executor.node.selector.node-role.kubernetes.io/master", ""),
])
def test_a_spark_setting_can_only_say_one_thing_and_only_what_a_job_may(
        key: str, value: str) -> None:
    paths = _paths(_spec(sparkConf={key: value}))
    assert len(paths) == 1 and paths[0].startswith("spec.sparkConf["), paths


def test_spark_settings_a_job_may_make_pass() -> None:
    assert _paths(_spec(sparkConf={
        "spark.sql.shuffle.partitions": "4",
        "spark.executor.extraJavaOptions": "-XX:+UseG1GC -Dx=C:\\dir",
        "spark.kubernetes.executor.label.team": "a",
        "spark.kubernetes.executor.annotation.prometheus.io/scrape": "true",
        "spark.kubernetes.driver.annotation.container.apparmor.security.beta.kubernetes.io/x":
            "runtime/default",
        "spark.kubernetes.node.selector.disk": "ssd"})) == []


def test_settings_from_secrets_are_allowed_but_never_for_what_decides_the_pods() -> None:
    ref = {"secretKeyRef": {"name": "creds", "key": "token"}}
    assert _paths(_spec(sparkConf={"spark.hadoop.fs.s3a.secret.key": ref})) == []
    refused = _spec(sparkConf={"spark.kubernetes.container.image": ref,
                               "spark.kubernetes.executor.label.team": ref,
                               "spark.kubernetes.namespace": ref})
    assert sorted(_paths(refused)) == [
        "spec.sparkConf[spark.kubernetes.container.image]",
        "spec.sparkConf[spark.kubernetes.executor.label.team]",
        "spec.sparkConf[spark.kubernetes.namespace]"]
