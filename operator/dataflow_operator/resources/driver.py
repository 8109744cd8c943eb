"""The driver: a Pod running the runner in Spark client mode, and the headless Service through
which executors reach it and the operator reads its status."""

from __future__ import annotations

from typing import Any

import yaml

from dataflow_engine.compiler.policy import OPERATOR_CONTAINERS, OWNED_VOLUME_PREFIX
from dataflow_engine.graph.deployment import SlotPlan, executor_shape
from dataflow_engine.rest import DEFAULT_SECRETS_DIR, RESOURCE_PROFILES_KEY
from dataflow_engine.rest.endpoints import TOKEN_ENV
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_engine.spec.quantity import memory_mebibytes, parse_quantity
from dataflow_engine.spec.secret_refs import plain, secret_keys_by_name
from dataflow_engine.spec.spark_properties import spark_defaults
from dataflow_operator.plan import JOB_FILE_KEY, REQUIREMENTS_FILE
from dataflow_operator.resources.meta import LABEL_JOB, LABEL_PLAN, LABEL_ROLE, JobRef, labels
from dataflow_operator.resources.meta import metadata as object_metadata
from dataflow_operator.resources.pod_template import merge
from dataflow_operator.resources.security import (
    container_security_context,
    pod_security_context,
)
from dataflow_operator.status.model import DeploymentStatus

CONF_DIR = "/etc/dataflow"
JOB_FILE = f"{CONF_DIR}/{JOB_FILE_KEY}"
#: The operator's Spark settings, in the plan ConfigMap; the driver reads the file as
#: spark-submit's --properties-file (not a SPARK_CONF_DIR: see docs/image.md's class archive).
PROPERTIES_KEY = "spark-defaults.conf"
EXECUTOR_TEMPLATE_FILE = f"{CONF_DIR}/executor-pod-template.yaml"
IN_CLUSTER_MASTER = "k8s://https://kubernetes.default.svc"
DRIVER_CONTAINER = OPERATOR_CONTAINERS["driver"]
EXECUTOR_CONTAINER = OPERATOR_CONTAINERS["executor"]
#: The operator's volumes (a job's templates may not name them).
PLAN_VOLUME = f"{OWNED_VOLUME_PREFIX}plan"
SCRATCH_VOLUME = f"{OWNED_VOLUME_PREFIX}scratch"
REQUIREMENTS_VOLUME = f"{OWNED_VOLUME_PREFIX}requirements"
PY_FILES_VOLUME = f"{OWNED_VOLUME_PREFIX}pyfiles"
SECRET_VOLUME = f"{OWNED_VOLUME_PREFIX}secret"
#: Where the operator's JVM options reach a driver's JVM: Spark's launcher adds them to the
#: JVM it starts (executors get them as spark.executor.extraJavaOptions).
JVM_OPTIONS_ENV = "SPARK_SUBMIT_OPTS"
EXECUTOR_JAVA_OPTIONS = "spark.executor.extraJavaOptions"
PORTS = {"driver-rpc": 7078, "blockmanager": 7079, "spark-ui": 4040, "status": 8081}
#: The driver's JVM heap is this share of the pod's memory (at least MIN_DRIVER_HEAP_MIB); the
#: rest is the Python runner's and the JVM's own overhead.
DRIVER_HEAP_FRACTION = 0.5
MIN_DRIVER_HEAP_MIB = 512
#: The driver's last step in building an executor pod: the group's exact shape and label.
FEATURE_STEP = "io.dataflow.spark.SlotSharingGroupFeatureStep"
STATUS_LINGER_SECONDS = 30
#: Where spec.pyFiles' ConfigMaps are mounted in the driver: one directory per entry.
PY_FILES_DIR = "/opt/dataflow/pyfiles"
#: The executors' copy of the job's requirements (the plan ConfigMap's one key).
EXECUTOR_REQUIREMENTS_DIR = "/etc/dataflow-requirements"


def py_file_arguments(spec: DataflowJobSpec, root: str) -> list[str]:
    """`dataflow run --py-files` arguments: entry i of spec.pyFiles as the driver sees it,
    a ConfigMap's as ``root/i`` (a directory, or the one key in it)."""
    arguments: list[str] = []
    for index, entry in enumerate(spec.py_files):
        if entry.config_map is not None:
            source = f"{root}/{index}" + (f"/{entry.key}" if entry.key else "")
        else:
            source = entry.path or entry.url or ""
        arguments += ["--py-files", source]
    return arguments


def requirements_environment(spec: DataflowJobSpec, requirements_file: str) -> list[
        dict[str, str]]:
    """What the image's entrypoint needs to build the job's Python environment first."""
    if not spec.requirements:
        return []
    env = [{"name": "DATAFLOW_REQUIREMENTS", "value": requirements_file}]
    if spec.requirements_cache_dir:
        env.append({"name": "DATAFLOW_VENV_CACHE", "value": spec.requirements_cache_dir})
    return env


def driver_heap_mib(spec: DataflowJobSpec) -> int:
    memory = memory_mebibytes(parse_quantity(spec.driver.memory))
    return min(memory, max(MIN_DRIVER_HEAP_MIB, int(memory * DRIVER_HEAP_FRACTION)))


def executor_pod_template(job: JobRef, spec: DataflowJobSpec) -> dict[str, Any]:
    container: dict[str, Any] = {"name": EXECUTOR_CONTAINER,
                                 "securityContext": container_security_context()}
    base: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": labels(job, "executor")},
        # The job's executor account, which has no rights and gets no token (Spark's
        # spark.kubernetes.authenticate.executor.serviceAccountName says the same).
        "spec": {"serviceAccountName": job.executor_account,
                 "automountServiceAccountToken": False,
                 "securityContext": pod_security_context(), "containers": [container]},
    }
    if spec.requirements:
        # The same requirements, so the same environment path as the driver's python.
        container["env"] = requirements_environment(
            spec, f"{EXECUTOR_REQUIREMENTS_DIR}/{REQUIREMENTS_FILE}")
        container["volumeMounts"] = [{"name": REQUIREMENTS_VOLUME, "readOnly": True,
                                      "mountPath": EXECUTOR_REQUIREMENTS_DIR}]
        base["spec"]["volumes"] = [{"name": REQUIREMENTS_VOLUME, "configMap": {
            "name": job.plan_config_map,
            "items": [{"key": REQUIREMENTS_FILE, "path": REQUIREMENTS_FILE}]}}]
    user = spec.pod_template.executor if spec.pod_template else None
    return merge(base, user) if user else base


def spark_conf(job: JobRef, spec: DataflowJobSpec, plan: SlotPlan, image: str,
               jvm_options: str = "") -> dict[str, str]:
    """Spark-on-Kubernetes client-mode settings; executors are sized per slot sharing group,
    their JVMs started with the operator's ``jvm_options`` and then the job's own."""
    default_shape = executor_shape(plan.executors[0])
    conf = {
        "spark.master": IN_CLUSTER_MASTER,
        "spark.submit.deployMode": "client",
        "spark.app.name": job.name,
        "spark.kubernetes.namespace": job.namespace,
        "spark.kubernetes.driver.pod.name": job.driver_pod,
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.executor.podNamePrefix": job.name,
        "spark.kubernetes.executor.podTemplateFile": EXECUTOR_TEMPLATE_FILE,
        "spark.kubernetes.executor.podTemplateContainerName": EXECUTOR_CONTAINER,
        "spark.kubernetes.authenticate.caCertFile":
            "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "spark.kubernetes.authenticate.oauthTokenFile":
            "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "spark.kubernetes.authenticate.executor.serviceAccountName": job.executor_account,
        # Executors get their settings from the driver; no ConfigMap, so drivers need no
        # rights on ConfigMaps.
        "spark.kubernetes.executor.disableConfigMap": "true",
        "spark.kubernetes.driver.ownPersistentVolumeClaim": "false",
        "spark.kubernetes.driver.reusePersistentVolumeClaim": "false",
        "spark.driver.host": f"{job.driver_service}.{job.namespace}.svc",
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.driver.port": str(PORTS["driver-rpc"]),
        "spark.driver.blockManager.port": str(PORTS["blockmanager"]),
        "spark.ui.port": str(PORTS["spark-ui"]),
        "spark.driver.memory": f"{driver_heap_mib(spec)}m",
        # Stage-level scheduling: one ResourceProfile per slot sharing group (the runner sets
        # them on each group's RDDs); dynamic allocation requests executors of each shape.
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.maxExecutors": str(max(e.count for e in plan.executors)),
        "spark.scheduler.resource.profileMergeConflicts": "true",
        # The default profile has the first group's shape; every group gets its own profile.
        "spark.executor.cores": str(default_shape.cores),
        "spark.task.cpus": str(default_shape.task_cpus),
        "spark.executor.memory": f"{default_shape.heap_mib}m",
        "spark.executor.memoryOverhead": f"{default_shape.overhead_mib}m",
        "spark.kubernetes.executor.pod.featureSteps": FEATURE_STEP,
        RESOURCE_PROFILES_KEY: "true",
    }
    for key, value in labels(job, "executor").items():
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    # Values from Secrets are read by the driver at its start (dataflow_engine.runtime.secrets).
    job_conf = plain(spec.spark_conf)
    conf.update(job_conf)
    if jvm_options:
        conf[EXECUTOR_JAVA_OPTIONS] = " ".join(
            filter(None, (jvm_options, job_conf.get(EXECUTOR_JAVA_OPTIONS))))
    return conf


def plan_config_map(job: JobRef, files: dict[str, str], conf: dict[str, str],
                    executor_template: dict[str, Any], plan_hash: str) -> dict[str, Any]:
    data = {**files, PROPERTIES_KEY: spark_defaults(conf),
            "executor-pod-template.yaml": yaml.safe_dump(executor_template, sort_keys=False)}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": object_metadata(job, job.plan_config_map, "plan",
                                        **{LABEL_PLAN: plan_hash}),
            "data": data}


def restore_arguments(spec: DataflowJobSpec, deployment: DeploymentStatus | None) -> list[str]:
    """``dataflow run`` arguments saying where a continuous job starts: where its deployment
    began, unless a checkpoint of that deployment is newer."""
    allow = ["--allow-non-restored-state"] if spec.job.allow_non_restored_state else []
    if deployment is None:
        return ["--restore", "latest", *allow]
    return ["--restore", deployment.restore_from, "--deployment", deployment.id, *allow]


def secret_volumes(spec: DataflowJobSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The Secrets the job references, mounted in the driver alone (which hands the values to
    its tasks) as ``DEFAULT_SECRETS_DIR/<name>/<key>``, each with just the referenced keys.
    Optional: a missing Secret or key fails the run naming it, instead of a pod stuck
    ContainerCreating."""
    volumes, mounts = [], []
    for index, (name, items) in enumerate(sorted(secret_keys_by_name(spec).items())):
        volume = f"{SECRET_VOLUME}-{index}"
        volumes.append({"name": volume, "secret": {
            "secretName": name, "optional": True, "defaultMode": 0o440,
            "items": [{"key": key, "path": key} for key in items]}})
        mounts.append({"name": volume, "readOnly": True,
                       "mountPath": f"{DEFAULT_SECRETS_DIR}/{name}"})
    return volumes, mounts


def driver_pod(job: JobRef, spec: DataflowJobSpec, image: str, plan_hash: str,
               restart: int, deployment: DeploymentStatus | None = None,
               status_token: str | None = None, jvm_options: str = "") -> dict[str, Any]:
    py_file_volumes: list[dict[str, Any]] = []
    py_file_mounts: list[dict[str, Any]] = []
    for index, entry in enumerate(spec.py_files):
        if entry.config_map is not None:
            items = {"items": [{"key": entry.key, "path": entry.key}]} if entry.key else {}
            py_file_volumes.append({"name": f"{PY_FILES_VOLUME}-{index}",
                                    "configMap": {"name": entry.config_map, **items}})
            py_file_mounts.append({"name": f"{PY_FILES_VOLUME}-{index}", "readOnly": True,
                                   "mountPath": f"{PY_FILES_DIR}/{index}"})
    secret_volume_list, secret_mounts = secret_volumes(spec)
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **object_metadata(job, job.driver_pod, "driver", **{LABEL_PLAN: plan_hash}),
            "annotations": {"dataflow.io/restart": str(restart)},
        },
        "spec": {
            "serviceAccountName": spec.service_account_name or job.driver_account,
            "restartPolicy": "Never",
            "securityContext": pod_security_context(),
            "containers": [{
                "name": DRIVER_CONTAINER,
                "image": image,
                "args": ["driver", JOB_FILE, "--master", IN_CLUSTER_MASTER,
                         "--properties-file", f"{CONF_DIR}/{PROPERTIES_KEY}",
                         "--status-port", str(PORTS["status"]), "--status-host", "0.0.0.0",
                         "--no-progress",
                         # Long enough for the operator to read the final status.
                         "--status-linger", str(STATUS_LINGER_SECONDS),
                         *restore_arguments(spec, deployment),
                         *py_file_arguments(spec, PY_FILES_DIR)],
                "env": [{"name": "DATAFLOW_JOB", "value": job.name},
                        *([{"name": TOKEN_ENV, "value": status_token}] if status_token else []),
                        *([{"name": JVM_OPTIONS_ENV, "value": jvm_options}] if jvm_options
                          else []),
                        *requirements_environment(spec, f"{CONF_DIR}/{REQUIREMENTS_FILE}")],
                "ports": [{"name": name, "containerPort": port}
                          for name, port in PORTS.items()],
                "resources": {"requests": {"cpu": spec.driver.cpu,
                                           "memory": spec.driver.memory},
                              "limits": {"memory": spec.driver.memory}},
                "readinessProbe": {"httpGet": {"path": "/status", "port": "status"},
                                   "periodSeconds": 5},
                "securityContext": container_security_context(),
                "volumeMounts": [{"name": PLAN_VOLUME, "mountPath": CONF_DIR, "readOnly": True},
                                 {"name": SCRATCH_VOLUME, "mountPath": "/tmp"},
                                 *py_file_mounts, *secret_mounts],
            }],
            "volumes": [{"name": PLAN_VOLUME, "configMap": {"name": job.plan_config_map}},
                        {"name": SCRATCH_VOLUME, "emptyDir": {}}, *py_file_volumes,
                        *secret_volume_list],
        },
    }
    user = spec.pod_template.driver if spec.pod_template else None
    return merge(pod, user) if user else pod


def driver_service(job: JobRef) -> dict[str, Any]:
    """Headless, selecting only the driver pod: executors resolve the driver by this name."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_metadata(job, job.driver_service, "driver"),
        "spec": {
            "clusterIP": "None",
            "selector": {LABEL_JOB: job.name, LABEL_ROLE: "driver"},
            "ports": [{"name": name, "port": port, "targetPort": port}
                      for name, port in PORTS.items()],
            "publishNotReadyAddresses": True,
        },
    }
