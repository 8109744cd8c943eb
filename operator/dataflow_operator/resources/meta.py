"""Names, labels and owner references shared by every object a job creates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dataflow_engine.spec.model import API_GROUP, API_VERSION, KIND

LABEL_JOB = f"{API_GROUP}/job"
LABEL_ROLE = f"{API_GROUP}/role"
#: Set on executor pods by the driver's SlotSharingGroupFeatureStep (docker/spark).
LABEL_SLOT_SHARING_GROUP = f"{API_GROUP}/slot-sharing-group"
LABEL_PLAN = f"{API_GROUP}/plan-hash"
MANAGED_BY = "dataflow-operator"
#: Every driver's and executor's service account starts with these, so that one admission
#: policy binding matches the requests of every driver (helm/.../admission-policies.yaml).
DRIVER_ACCOUNT_PREFIX = "dataflow-driver-"
EXECUTOR_ACCOUNT_PREFIX = "dataflow-executor-"


@dataclass(frozen=True)
class JobRef:
    """The DataflowJob an object belongs to."""

    name: str
    namespace: str
    uid: str

    @property
    def driver_pod(self) -> str:
        return f"{self.name}-driver"

    @property
    def driver_service(self) -> str:
        return f"{self.name}-driver"

    @property
    def driver_account(self) -> str:
        return f"{DRIVER_ACCOUNT_PREFIX}{self.name}"

    @property
    def executor_account(self) -> str:
        return f"{EXECUTOR_ACCOUNT_PREFIX}{self.name}"

    @property
    def plan_config_map(self) -> str:
        return f"{self.name}-plan"

    def owner_reference(self) -> dict[str, Any]:
        return {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": KIND, "name": self.name,
                "uid": self.uid, "controller": True, "blockOwnerDeletion": True}


def labels(job: JobRef, role: str, **extra: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "dataflow-job",
        "app.kubernetes.io/instance": job.name,
        "app.kubernetes.io/component": role,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        LABEL_JOB: job.name,
        LABEL_ROLE: role,
        **extra,
    }


def metadata(job: JobRef, name: str, role: str, **extra_labels: str) -> dict[str, Any]:
    return {"name": name, "namespace": job.namespace, "labels": labels(job, role, **extra_labels),
            "ownerReferences": [job.owner_reference()]}
