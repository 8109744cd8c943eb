"""The objects a DataflowJob owns: restricted pods, labels, owner references, least privilege."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.errors import SpecError
from dataflow_operator.backends.status_tokens import KEY_FILE, StatusTokens
from dataflow_operator.plan import build_plan
from dataflow_operator.resources import rbac
from dataflow_operator.resources.driver import (
    FEATURE_STEP,
    driver_pod,
    driver_service,
    executor_pod_template,
    plan_config_map,
    spark_conf,
)
from dataflow_operator.resources.meta import LABEL_JOB, LABEL_ROLE, JobRef
from dataflow_operator.status.model import DeploymentStatus

pytestmark = pytest.mark.unit
JOB = JobRef("wc", "team-a", "1234")
MANIFEST = """
apiVersion: dataflow.io/v1alpha1
kind: DataflowJob
metadata: {name: wc}
spec:
  parallelism: 3
  slotsPerExecutor: 2
  slotSharingGroups: [{name: default, cpu: 500m, memory: 1Gi}, {name: big, cpu: "2", memory: 4Gi}]
  pipeline:
    - {name: src, type: sequence, args: {from: 1, to: 100}}
    - {name: sq, type: map, function: square, inputs: [src], slotSharingGroup: big}
    - {name: out, type: discard, inputs: [sq]}
"""


def _spec(extra: str = "") -> Any:
    return load_manifest_text(MANIFEST + extra).spec


def _restricted(pod_spec: dict[str, Any]) -> None:
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod_spec["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}


def test_driver_pod_is_restricted_labelled_and_owned() -> None:
    pod = driver_pod(JOB, _spec(), "img:1", "abc", 0)
    _restricted(pod["spec"])
    labels = pod["metadata"]["labels"]
    assert (labels[LABEL_JOB], labels[LABEL_ROLE]) == ("wc", "driver")
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("DataflowJob", "1234", True)
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["serviceAccountName"] == "dataflow-driver-wc"


def test_the_driver_starts_where_its_deployment_says_and_serves_status_to_the_pod_network(
        ) -> None:
    deployment = DeploymentStatus(id="3-abcd", generation=3, restore_from="/sp/savepoint-7-ff")
    args = driver_pod(JOB, _spec(), "img:1", "abc", 0, deployment)["spec"]["containers"][0]["args"]
    assert args[args.index("--restore") + 1] == "/sp/savepoint-7-ff"
    assert args[args.index("--deployment") + 1] == "3-abcd"
    assert args[args.index("--status-host") + 1] == "0.0.0.0"  # the operator reads it
    legacy = driver_pod(JOB, _spec(), "img:1", "abc", 0)["spec"]["containers"][0]["args"]
    assert legacy[legacy.index("--restore") + 1] == "latest" and "--deployment" not in legacy


def test_status_tokens_are_per_job_stable_and_their_key_stays_private(tmp_path: Path) -> None:
    tokens = StatusTokens.in_state_dir(tmp_path / "state")
    assert (tmp_path / "state" / KEY_FILE).stat().st_mode & 0o777 == 0o600
    again = StatusTokens.in_state_dir(tmp_path / "state")  # after an operator restart
    other = JobRef("wc", "ns", "another-uid")
    assert tokens.for_job(JOB) == again.for_job(JOB) != tokens.for_job(other)
    assert StatusTokens(b"x" * 32).for_job(JOB) != tokens.for_job(JOB)
    env = driver_pod(JOB, _spec(), "img:1", "abc", 0, None, tokens.for_job(JOB))[
        "spec"]["containers"][0]["env"]
    assert {"name": "DATAFLOW_STATUS_TOKEN", "value": tokens.for_job(JOB)} in env


def test_replicas_creating_the_status_key_together_all_read_the_same_whole_key(
        tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        tokens = list(pool.map(lambda _: StatusTokens.in_state_dir(tmp_path), range(32)))
    assert len({t.for_job(JOB) for t in tokens}) == 1
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILE]  # no drafts left behind


def test_executor_template_is_restricted_and_merges_user_fields() -> None:
    spec = _spec("  podTemplate:\n    executor:\n      metadata: {labels: {team: a}}\n"
                 "      spec: {containers: [{name: executor, env: [{name: X, value: '1'}]}]}\n")
    template = executor_pod_template(JOB, spec)
    _restricted(template["spec"])
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["metadata"]["labels"][LABEL_ROLE] == "executor"
    assert template["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}]


def test_templates_cannot_weaken_security() -> None:
    spec = _spec("  podTemplate:\n    driver:\n      spec:\n        hostNetwork: true\n"
                 "        containers: [{name: driver, securityContext: {privileged: true}}]\n")
    with pytest.raises(SpecError) as info:
        build_plan("wc", "team-a", spec)
    paths = [p.path for p in info.value.problems]
    assert paths == ["spec.podTemplate.driver.spec.hostNetwork",
                     "spec.podTemplate.driver.spec.containers[0].securityContext.privileged"]


def test_headless_service_selects_only_the_driver() -> None:
    service = driver_service(JOB)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {LABEL_JOB: "wc", LABEL_ROLE: "driver"}
    assert {p["name"] for p in service["spec"]["ports"]} >= {"driver-rpc", "status"}


def test_spark_conf_sizes_executors_per_group() -> None:
    spec = _spec()
    plan = build_plan("wc", "team-a", spec)
    conf = spark_conf(JOB, spec, plan.compiled.slot_plan, "img:1")
    assert conf["spark.kubernetes.driver.pod.name"] == "wc-driver"
    assert conf["spark.driver.host"] == "wc-driver.team-a.svc"
    assert conf["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    # 500m slots round up to one core each: 2 slots, 2 cores, 1 cpu per task.
    assert (conf["spark.executor.cores"], conf["spark.task.cpus"]) == ("2", "1")
    # The pod keeps the compiled 2Gi: 60% heap, the rest for the Python workers.
    assert (conf["spark.executor.memory"], conf["spark.executor.memoryOverhead"]) == (
        "1228m", "820m")
    # The pods themselves get each group's exact shape from the driver's feature step.
    assert conf["spark.kubernetes.executor.pod.featureSteps"] == FEATURE_STEP
    assert conf["spark.dataflow.resourceProfiles.enabled"] == "true"
    assert conf["spark.dynamicAllocation.maxExecutors"] == "2"
    assert conf[f"spark.kubernetes.executor.label.{LABEL_JOB}"] == "wc"
    executors = {e.slot_sharing_group: e for e in plan.status.executors}
    assert (executors["big"].cpu, executors["big"].memory, executors["big"].count) == (
        "4", "8Gi", 2)


def test_the_operators_jvm_options_reach_the_driver_and_the_executors_before_the_jobs() -> None:
    plain_spec = _spec()
    slots = build_plan("wc", "team-a", plain_spec).compiled.slot_plan
    assert "spark.executor.extraJavaOptions" not in spark_conf(JOB, plain_spec, slots, "img:1")
    env = driver_pod(JOB, plain_spec, "img:1", "abc", 0)["spec"]["containers"][0]["env"]
    assert "SPARK_SUBMIT_OPTS" not in {e["name"] for e in env}

    options = "-XX:TieredStopAtLevel=1"
    conf = spark_conf(JOB, plain_spec, slots, "img:1", options)
    assert conf["spark.executor.extraJavaOptions"] == options
    env = driver_pod(JOB, plain_spec, "img:1", "abc", 0, jvm_options=options)[
        "spec"]["containers"][0]["env"]
    assert {"name": "SPARK_SUBMIT_OPTS", "value": options} in env  # Spark's launcher adds them
    # The job's own options come after the operator's (the JVM takes the last of a flag).
    spec = _spec("  sparkConf: {spark.executor.extraJavaOptions: -Xss4m}\n")
    conf = spark_conf(JOB, spec, slots, "img:1", options)
    assert conf["spark.executor.extraJavaOptions"] == f"{options} -Xss4m"


def test_plan_config_map_carries_job_plan_and_spark_defaults() -> None:
    spec = _spec()
    plan = build_plan("wc", "team-a", spec)
    config_map = plan_config_map(JOB, plan.files, {"spark.a": "1"}, {"kind": "Pod"}, "h")
    data = config_map["data"]
    assert load_manifest_text(data["job.yaml"]).spec == spec
    assert "spark.a=1\n" in data["spark-defaults.conf"]
    assert yaml.safe_load(data["executor-pod-template.yaml"]) == {"kind": "Pod"}


def test_driver_role_is_least_privilege() -> None:
    rules = rbac.role(JOB)["rules"]
    resources = {r for rule in rules for r in rule["resources"]}
    assert resources == {"pods"}
    assert all(rule["apiGroups"] == [""] for rule in rules)
    binding = rbac.role_binding(JOB)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "dataflow-driver-wc",
                                    "namespace": "team-a"}]
    # Executors: an account of their own without a token, named in Spark's settings.
    executor_account = rbac.executor_service_account(JOB)
    assert (executor_account["metadata"]["name"],
            executor_account["automountServiceAccountToken"]) == ("dataflow-executor-wc", False)
    spec = _spec()
    conf = spark_conf(JOB, spec, build_plan("wc", "team-a", spec).compiled.slot_plan, "img:1")
    assert conf["spark.kubernetes.authenticate.executor.serviceAccountName"] == (
        "dataflow-executor-wc")
    assert conf["spark.kubernetes.executor.disableConfigMap"] == "true"
    assert executor_pod_template(JOB, spec)["spec"]["automountServiceAccountToken"] is False


def test_plan_hash_ignores_suspend_and_the_ttl_only() -> None:
    base = build_plan("wc", "ns", _spec()).status.hash
    assert build_plan("wc", "ns", _spec("  suspend: true\n")).status.hash == base
    assert build_plan("wc", "ns", _spec("  ttlSecondsAfterFinished: 60\n")).status.hash == base
    changed = load_manifest_text(MANIFEST.replace("parallelism: 3", "parallelism: 4")).spec
    assert build_plan("wc", "ns", changed).status.hash != base


def test_driver_pod_and_heap_follow_spec_driver() -> None:
    spec = _spec("  driver: {cpu: 250m, memory: 3Gi}\n")
    plan = build_plan("wc", "team-a", spec)
    container = driver_pod(JOB, spec, "img:1", plan.status.hash, 0)["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "3Gi"},
                                      "limits": {"memory": "3Gi"}}
    assert spark_conf(JOB, spec, plan.compiled.slot_plan, "img:1")["spark.driver.memory"] == (
        "1536m")
    small = _spec("  driver: {memory: 600Mi}\n")
    conf = spark_conf(JOB, small, build_plan("wc", "team-a", small).compiled.slot_plan, "i:1")
    assert conf["spark.driver.memory"] == "512m"  # never below the heap Spark needs


USER_CODE = """  pyFiles:
    - {configMap: code}
    - {configMap: more-code, key: lib.zip}
    - {path: /mnt/code/extra.py}
    - {url: "https://example.com/pkg.zip"}
  requirements: ["humanize==4.9.0", "/mnt/wheels/probe-1.0-py3-none-any.whl"]
  requirementsCacheDir: /cache/venvs
"""


def test_py_files_are_mounted_and_passed_to_the_runner() -> None:
    spec = _spec(USER_CODE)
    pod = driver_pod(JOB, spec, "img:1", "abc", 0)["spec"]
    container = pod["containers"][0]
    args = container["args"]
    files = [args[i + 1] for i, arg in enumerate(args) if arg == "--py-files"]
    assert files == ["/opt/dataflow/pyfiles/0", "/opt/dataflow/pyfiles/1/lib.zip",
                     "/mnt/code/extra.py", "https://example.com/pkg.zip"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["dataflow-pyfiles-0"]["configMap"] == {"name": "code"}
    assert volumes["dataflow-pyfiles-1"]["configMap"] == {
        "name": "more-code", "items": [{"key": "lib.zip", "path": "lib.zip"}]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    mount = mounts["dataflow-pyfiles-1"]
    assert (mount["mountPath"], mount["readOnly"]) == ("/opt/dataflow/pyfiles/1", True)
    assert "dataflow-pyfiles-2" not in volumes  # a path is the pod template's own volume


def test_requirements_reach_the_driver_and_the_executors_alike() -> None:
    spec = _spec(USER_CODE)
    plan = build_plan("wc", "team-a", spec)
    assert plan.files["requirements.txt"] == (
        "humanize==4.9.0\n/mnt/wheels/probe-1.0-py3-none-any.whl\n")
    driver = driver_pod(JOB, spec, "img:1", "abc", 0)["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in driver["env"]}
    assert (env["DATAFLOW_REQUIREMENTS"], env["DATAFLOW_VENV_CACHE"]) == (
        "/etc/dataflow/requirements.txt", "/cache/venvs")
    template = executor_pod_template(JOB, spec)
    executor = template["spec"]["containers"][0]
    executor_env = {e["name"]: e["value"] for e in executor["env"]}
    assert executor_env == {"DATAFLOW_REQUIREMENTS": "/etc/dataflow-requirements/requirements.txt",
                            "DATAFLOW_VENV_CACHE": "/cache/venvs"}
    assert template["spec"]["volumes"] == [{"name": "dataflow-requirements", "configMap": {
        "name": "wc-plan", "items": [{"key": "requirements.txt", "path": "requirements.txt"}]}}]
    # Without requirements nothing of it appears.
    plain = _spec()
    assert "requirements.txt" not in build_plan("wc", "team-a", plain).files
    assert "env" not in executor_pod_template(JOB, plain)["spec"]["containers"][0]


@pytest.mark.parametrize(("entry", "message"), [
    ({"configMap": "code", "url": "https://x/y.py"}, "exactly one of"),
    ({"key": "a.py"}, "exactly one of"),
    ({"path": "/a.py", "key": "a.py"}, "'key' belongs with 'configMap'"),
    ({"url": "http://example.com/a.py"}, "pattern"),
    ({"path": "relative/a.py"}, "pattern"),
    ({"path": "/a.txt"}, "pattern"),
])
def test_bad_py_files_name_the_field(entry: dict[str, str], message: str) -> None:
    flow = yaml.safe_dump(entry, default_flow_style=True).strip()
    with pytest.raises(SpecError) as error:
        load_manifest_text(MANIFEST + f"  pyFiles: [{flow}]\n")
    assert "spec.pyFiles[0]" in str(error.value) and message in str(error.value)


def test_pip_options_are_not_requirements() -> None:
    with pytest.raises(SpecError) as error:
        load_manifest_text(MANIFEST + '  requirements: ["--index-url=https://evil.example"]\n')
    assert "requirements" in str(error.value)
