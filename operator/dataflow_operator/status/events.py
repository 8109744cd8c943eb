"""Kubernetes Events about a DataflowJob or DataflowSnapshot (``kubectl describe`` shows
them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from dataflow_engine.spec.model import API_GROUP, API_VERSION, KIND
from dataflow_operator.kube import Kube
from dataflow_operator.status.conditions import now

COMPONENT = "dataflow-operator"
NORMAL, WARNING = "Normal", "Warning"


class InvolvedObject(Protocol):
    """What an Event is about: a DataflowJob or a DataflowSnapshot."""

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def uid(self) -> str: ...


@dataclass(frozen=True)
class Event:
    """An Event to post about a job: decided with the status it explains, posted before it."""

    type: str
    reason: str
    message: str


def event_object(job: InvolvedObject, type_: str, reason: str, message: str,
                 kind: str = KIND) -> dict[str, Any]:
    timestamp = now()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{job.name}.", "namespace": job.namespace},
        "involvedObject": {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": kind,
                           "name": job.name, "namespace": job.namespace, "uid": job.uid},
        "type": type_,
        "reason": reason,
        "message": message[:1024],
        "firstTimestamp": timestamp,
        "lastTimestamp": timestamp,
        "count": 1,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
    }


def post_event(kube: Kube, job: InvolvedObject, type_: str, reason: str, message: str,
               kind: str = KIND) -> None:
    kube.create(event_object(job, type_, reason, message, kind))
