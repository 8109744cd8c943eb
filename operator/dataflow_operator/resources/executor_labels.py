"""Slot sharing group labels on executor pods.

Spark names an executor pod's ResourceProfile (label ``spark-exec-resourceprofile-id``) but
knows nothing of slot sharing groups; the runner publishes which profile is which group, and
the operator labels the pods, so ``kubectl get pods -l dataflow.io/slot-sharing-group=G`` works.
"""

from __future__ import annotations

from typing import Any

from dataflow_operator.resources.meta import LABEL_SLOT_SHARING_GROUP

SPARK_PROFILE_LABEL = "spark-exec-resourceprofile-id"


def executor_label_patches(pods: list[dict[str, Any]],
                           profiles: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """(pod name, merge patch) for every executor pod whose group label is missing or wrong."""
    patches = []
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        group = profiles.get(str(labels.get(SPARK_PROFILE_LABEL, "")))
        if group is not None and labels.get(LABEL_SLOT_SHARING_GROUP) != group:
            patches.append((pod["metadata"]["name"],
                            {"metadata": {"labels": {LABEL_SLOT_SHARING_GROUP: group}}}))
    return patches
