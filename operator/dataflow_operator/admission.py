"""What the chart's admission policies need to know of the job policy, as one JSON document.

The policies (helm/dataflow-operator/templates/admission-policies.yaml) are CEL evaluated by
the API server; the lists they check against are the engine's own (dataflow_engine.compiler.policy),
written to the chart's files/job-policy.json by ``dataflow job-policy`` (a test keeps the file
equal), so that the operator's early check and the API server's refuse the same settings.
"""

from __future__ import annotations

import json
from typing import Any

from dataflow_engine.compiler import policy
from dataflow_engine.spec.spark_properties import (
    KEY_PATTERN,
    QUALIFIED_KEY_PREFIXES,
    QUALIFIED_NAME,
)
from dataflow_operator.resources.meta import (
    DRIVER_ACCOUNT_PREFIX,
    EXECUTOR_ACCOUNT_PREFIX,
    LABEL_JOB,
    LABEL_ROLE,
)

#: Where the chart reads it.
CHART_FILE = "files/job-policy.json"


def job_policy_facts() -> dict[str, Any]:
    return {
        "sparkKeyPattern": KEY_PATTERN.pattern,
        "sparkQualifiedKeyPrefixes": list(QUALIFIED_KEY_PREFIXES),
        "qualifiedNamePattern": QUALIFIED_NAME.pattern,
        "ownedSparkKeys": sorted(key.lower() for key in policy.OWNED_SPARK_KEYS),
        "ownedSparkPrefixes": [prefix.lower() for prefix in policy.OWNED_SPARK_PREFIXES],
        "ownedMetadata": list(policy.OWNED_METADATA),
        "ownedSpec": list(policy.OWNED_SPEC),
        "ownedContainerFields": list(policy.OWNED_CONTAINER_FIELDS),
        "operatorContainers": policy.OPERATOR_CONTAINERS,
        "restrictedVolumeTypes": sorted(policy.RESTRICTED_VOLUME_TYPES - {"secret"}),
        "allowedProjections": sorted(policy.ALLOWED_PROJECTIONS),
        "controlPlaneKeys": sorted(policy.CONTROL_PLANE_KEYS),
        "driverAccountPrefix": DRIVER_ACCOUNT_PREFIX,
        "executorAccountPrefix": EXECUTOR_ACCOUNT_PREFIX,
        "jobLabel": LABEL_JOB,
        "roleLabel": LABEL_ROLE,
    }


def job_policy_json() -> str:
    return json.dumps(job_policy_facts(), indent=2) + "\n"
