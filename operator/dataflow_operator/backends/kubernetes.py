"""The production backend: a driver Pod in Spark client mode, executors as Spark-on-K8s pods."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from dataflow_engine.rest import (
    SAVEPOINTS_DISPOSE_PATH,
    SAVEPOINTS_PATH,
    STATUS_PATH,
    TOKEN_HEADER,
    DriverStatusDocument,
    SavepointDisposeRequest,
    SavepointTriggerRequest,
    parse_dispose_response,
    parse_status,
)
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.backends.base import DriverObservation, DriverPhase
from dataflow_operator.backends.status_tokens import StatusTokens
from dataflow_operator.kube import Kube, check_owned
from dataflow_operator.plan import JobPlan
from dataflow_operator.resources import rbac
from dataflow_operator.resources.driver import (
    PORTS,
    driver_pod,
    driver_service,
    executor_pod_template,
    plan_config_map,
    spark_conf,
)
from dataflow_operator.resources.meta import LABEL_PLAN, LABEL_ROLE, JobRef
from dataflow_operator.status.model import DeploymentStatus, DriverStatus


@dataclass
class PodSnapshot:
    """One monitor cycle's view of the watched namespaces' driver pods."""

    drivers: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


_POD_PHASES = {
    "Pending": DriverPhase.PENDING,
    "Running": DriverPhase.RUNNING,
    "Succeeded": DriverPhase.SUCCEEDED,
    "Failed": DriverPhase.FAILED,
}


class KubernetesBackend:
    name = "kubernetes"

    #: After an unanswered status request, wait this long before asking that driver again.
    STATUS_BACKOFF_SECONDS = 10.0

    def __init__(self, kube: Kube, image: str, tokens: StatusTokens,
                 jvm_options: str = "") -> None:
        self.kube = kube
        self.image = image
        self.jvm_options = jvm_options
        self.tokens = tokens
        self._status_quiet_until: dict[tuple[str, str], float] = {}

    def _image(self, spec: DataflowJobSpec) -> str:
        return spec.image or self.image

    def provision(self, job: JobRef, spec: DataflowJobSpec, plan: JobPlan,
                  restart: int, deployment: DeploymentStatus | None = None) -> DriverStatus:
        image = self._image(spec)
        for obj in supporting_objects(job, spec, plan, image, self.jvm_options):
            self.kube.create_or_adopt(obj)
        self._ensure_driver(job, spec, image, plan.status.hash, restart, deployment)
        return self.driver_status(job)

    def request_savepoint(self, job: JobRef, request: SavepointTriggerRequest) -> None:
        self.kube.proxy_post(job.driver_service, "status", job.namespace,
                             SAVEPOINTS_PATH.lstrip("/"), request.to_json(),
                             {TOKEN_HEADER: self.tokens.for_job(job)})

    def dispose_savepoint(self, job: JobRef, path: str) -> bool:
        answer = parse_dispose_response(self.kube.proxy_post(
            job.driver_service, "status", job.namespace, SAVEPOINTS_DISPOSE_PATH.lstrip("/"),
            SavepointDisposeRequest(path=path).to_json(),
            {TOKEN_HEADER: self.tokens.for_job(job)}, timeout=30))
        if answer is None:
            raise RuntimeError("the driver's answer to the disposal is not one this operator "
                               "reads")
        return answer.disposed

    @staticmethod
    def driver_status(job: JobRef) -> DriverStatus:
        """Where the driver is, and how a user reaches its log and Spark UI."""
        return DriverStatus(
            pod=job.driver_pod,
            status_url=f"/api/v1/namespaces/{job.namespace}/services/"
                       f"{job.driver_service}:status/proxy/status",
            spark_ui=f"http://{job.driver_service}.{job.namespace}.svc:{PORTS['spark-ui']}",
            spark_ui_forward=(f"kubectl port-forward --namespace {job.namespace} "
                              f"service/{job.driver_service} 4040:{PORTS['spark-ui']}"),
            logs=f"kubectl logs --namespace {job.namespace} {job.driver_pod}",
        )

    def _ensure_driver(self, job: JobRef, spec: DataflowJobSpec, image: str, plan_hash: str,
                       restart: int, deployment: DeploymentStatus | None) -> None:
        """Creates the driver pod; one that already runs this plan is adopted, one of another
        plan (or still terminating) is replaced."""
        pod = driver_pod(job, spec, image, plan_hash, restart, deployment,
                         self.tokens.for_job(job), self.jvm_options)
        for _ in range(30):
            try:
                self.kube.create(pod)
                return
            except ApiException as exc:
                if exc.status != 409:
                    raise
            existing = self.kube.get("Pod", job.namespace, job.driver_pod)
            if existing is not None:
                check_owned(existing, pod)
            if existing is not None and not existing["metadata"].get("deletionTimestamp"):
                if _plan_of(existing) == plan_hash:
                    return
                self.stop_driver(job)
            time.sleep(0.5)
        raise TimeoutError(f"driver pod {job.driver_pod} is still terminating")

    def forget(self, job: JobRef) -> None:
        """Everything is owned by the DataflowJob: the garbage collector removes it."""
        self._status_quiet_until.pop((job.namespace, job.name), None)

    def clean_up(self, job: JobRef) -> bool:
        """The driver pod; its executor pods are owned by it and follow. The plan ConfigMap,
        Service and account stay with the DataflowJob (a redeploy reuses them)."""
        return self.kube.delete("Pod", job.namespace, job.driver_pod)

    def stop_driver(self, job: JobRef) -> None:
        self.kube.delete("Pod", job.namespace, job.driver_pod, grace_seconds=0)
        for _ in range(60):
            if self.kube.get("Pod", job.namespace, job.driver_pod) is None:
                return
            time.sleep(0.25)

    def snapshot(self, jobs: list[JobRef]) -> PodSnapshot:
        """The jobs' driver pods in one LIST per namespace, instead of GETs per job."""
        snapshot = PodSnapshot()
        for namespace in sorted({j.namespace for j in jobs}):
            for pod in self.kube.list("Pod", namespace, f"{LABEL_ROLE}=driver"):
                snapshot.drivers[(namespace, pod["metadata"]["name"])] = pod
        return snapshot

    def observe(self, job: JobRef, snapshot: object = None) -> DriverObservation:
        if isinstance(snapshot, PodSnapshot):
            pod = snapshot.drivers.get((job.namespace, job.driver_pod))
        else:
            pod = self.kube.get("Pod", job.namespace, job.driver_pod)
        if pod is None:
            return DriverObservation(DriverPhase.MISSING)
        phase = _POD_PHASES.get(pod.get("status", {}).get("phase", ""), DriverPhase.PENDING)
        runner = None
        if phase is DriverPhase.RUNNING:
            runner = self._runner_status(job)
        reason, message = _pending(pod) if phase is DriverPhase.PENDING else ("", "")
        return DriverObservation(phase, runner, _failure_message(pod), _plan_of(pod),
                                 reason, message)

    def _runner_status(self, job: JobRef) -> DriverStatusDocument | None:
        key = (job.namespace, job.name)
        if time.monotonic() < self._status_quiet_until.get(key, 0.0):
            return None
        try:
            status = self.kube.proxy_get(job.driver_service, "status", job.namespace,
                                         STATUS_PATH.lstrip("/"), timeout=2)
        except (ApiException, OSError, ValueError):
            # Not serving yet, or no real container behind the pod: ask again later, so
            # unanswered requests never hold the monitor's threads.
            self._status_quiet_until[key] = time.monotonic() + self.STATUS_BACKOFF_SECONDS
            return None
        self._status_quiet_until.pop(key, None)
        return parse_status(status)


def supporting_objects(job: JobRef, spec: DataflowJobSpec, plan: JobPlan, image: str,
                       jvm_options: str = "") -> list[dict[str, Any]]:
    """Everything a job owns on Kubernetes but its driver pod: the plan ConfigMap, the driver's
    identity and the headless Service."""
    conf = spark_conf(job, spec, plan.compiled.slot_plan, image, jvm_options)
    return [plan_config_map(job, plan.files, conf, executor_pod_template(job, spec),
                            plan.status.hash),
            rbac.service_account(job), rbac.executor_service_account(job), rbac.role(job),
            rbac.role_binding(job, spec.service_account_name),
            driver_service(job)]


def _plan_of(pod: dict[str, Any]) -> str | None:
    labels: dict[str, str] = pod.get("metadata", {}).get("labels", {})
    return labels.get(LABEL_PLAN)


#: Waiting reasons of a container that is merely starting, not stuck.
_STARTING = frozenset({"ContainerCreating", "PodInitializing"})


def _pending(pod: dict[str, Any]) -> tuple[str, str]:
    """Why a Pending pod does not run: the scheduler's verdict, else a stuck container's."""
    status = pod.get("status", {})
    for condition in status.get("conditions", []) or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition.get("reason") or "Unschedulable", condition.get("message") or ""
    for container in [*(status.get("initContainerStatuses") or []),
                      *(status.get("containerStatuses") or [])]:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") and waiting["reason"] not in _STARTING:
            return waiting["reason"], waiting.get("message") or ""
    return "", ""


def _failure_message(pod: dict[str, Any]) -> str:
    status = pod.get("status", {})
    for container in status.get("containerStatuses", []) or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode", 0) != 0:
            reason = terminated.get("reason") or "Error"
            detail = terminated.get("message") or ""
            return f"driver container exited with code {terminated['exitCode']} ({reason}) {detail}"
    return str(status.get("message") or status.get("reason") or "")
