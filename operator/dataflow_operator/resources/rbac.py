"""The driver's identity: a ServiceAccount allowed to manage executor pods, and no more; and the
executors': an account without rights or a token.

RBAC cannot narrow pod permissions to one job's pods by label, so the Role is namespaced and
limited to what Spark's client-mode driver calls: executor pods (their ConfigMap is turned off,
spark.kubernetes.executor.disableConfigMap). Which pods a driver may create is the admission
policy's to say: only its own job's executors, as the executor account, in the restricted
profile (docs/security.md).
"""

from __future__ import annotations

from typing import Any

from dataflow_operator.resources.meta import JobRef, metadata

DRIVER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["pods"],
     "verbs": ["get", "list", "watch", "create", "delete", "deletecollection", "patch"]},
]


def service_account(job: JobRef) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": metadata(job, job.driver_account, "driver")}


def executor_service_account(job: JobRef) -> dict[str, Any]:
    """Executors call nothing on the API server: no token is mounted for them."""
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": metadata(job, job.executor_account, "executor"),
            "automountServiceAccountToken": False}


def role(job: JobRef) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": metadata(job, job.driver_account, "driver"), "rules": DRIVER_RULES}


def role_binding(job: JobRef, account: str | None = None) -> dict[str, Any]:
    """Binds the job's Role to its own account, or to the admin-allowed `account` the driver
    runs as instead (spec.serviceAccountName)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": metadata(job, job.driver_account, "driver"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": job.driver_account},
        "subjects": [{"kind": "ServiceAccount", "name": account or job.driver_account,
                      "namespace": job.namespace}],
    }
