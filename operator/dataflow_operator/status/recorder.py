"""Recording a job's status: Events posted, then the status patched, only when it changed.

Events are posted before the status they describe is written: if the operator dies between
the two, the retry posts them again, so an Event is never lost (at least once). The status is
written within its byte budget; the operator's own copy keeps every detail.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

from dataflow_operator.kube import Kube, merge_patch_between
from dataflow_operator.metrics import Metrics
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.status.budget import within_budget
from dataflow_operator.status.events import Event, post_event
from dataflow_operator.status.model import DataflowJobStatus

log = logging.getLogger("dataflow.operator")


class JobGone(Exception):
    """The DataflowJob was deleted while its status was being written."""


class StatusRecorder:
    def __init__(self, kube: Kube, metrics: Metrics) -> None:
        self.kube = kube
        self.metrics = metrics

    async def post(self, ref: JobRef, events: list[Event]) -> None:
        for event in events:
            try:
                await asyncio.to_thread(post_event, self.kube, ref, event.type, event.reason,
                                        event.message)
            except ApiException as exc:  # an Event is worth less than the reconcile
                self.metrics.error("EventPostFailed")
                log.warning("cannot post event %s: %s", event.reason, exc.reason)

    async def write(self, ref: JobRef, written: dict[str, Any] | None,
                    status: DataflowJobStatus) -> dict[str, Any]:
        """Patches what changed since ``written`` (the last document written) and returns
        the document now written; raises JobGone when the job no longer exists."""
        document = within_budget(status).model_dump(mode="json", by_alias=True)
        if document == written:
            return document
        started = time.perf_counter()
        try:
            await asyncio.to_thread(self.kube.merge_patch, "DataflowJob", ref.namespace,
                                    ref.name, {"status": merge_patch_between(written, document)},
                                    "status")
        except ApiException as exc:
            if exc.status == 404:
                raise JobGone(f"{ref.namespace}/{ref.name}") from exc
            raise
        self.metrics.status_patched(time.perf_counter() - started)
        return document
