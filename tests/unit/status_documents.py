"""Driver status documents for operator tests: the fields a test cares about, completed with
what every document carries, parsed as the operator parses one."""

from __future__ import annotations

from typing import Any

from dataflow_engine.rest import PROTOCOL_VERSION, DriverStatusDocument, parse_status


def status_document(fields: dict[str, Any]) -> DriverStatusDocument:
    document = parsed(fields)
    assert document is not None, f"not a status document: {fields}"
    return document


def parsed(fields: dict[str, Any]) -> DriverStatusDocument | None:
    """As a backend reads a document: None when it is malformed (or of another version)."""
    vertices = [{"name": v["id"], "parallelism": len(v.get("subtasks", [])) or 1,
                 "maxParallelism": 128, **v} for v in fields.get("vertices", [])]
    return parse_status({
        "schemaVersion": PROTOCOL_VERSION, "jobName": "job", "jobId": "0" * 32,
        "runtimeMode": "STREAMING" if "checkpoints" in fields else "BATCH",
        "startTime": 0, "updateTime": 0, "jobStatus": "RUNNING", **fields,
        "vertices": vertices})
