"""Reading and writing DataflowJob manifests (YAML)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dataflow_engine.compiler.validation import parse_job
from dataflow_engine.errors import SpecError
from dataflow_engine.spec.model import DataflowJob


def load_manifest_text(text: str, source: str = "<manifest>") -> DataflowJob:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError.single(source, f"not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError.single(source, "a manifest is a YAML mapping with apiVersion, kind, "
                               "metadata and spec")
    return parse_job(data)


def load_manifest(path: Path) -> DataflowJob:
    return load_manifest_text(path.read_text(), str(path))


def manifest_data(job: DataflowJob) -> dict[str, Any]:
    """The manifest as plain data, leaving out fields that hold their defaults."""
    return {
        "apiVersion": job.api_version,
        "kind": job.kind,
        "metadata": job.metadata.model_dump(exclude_none=True),
        "spec": job.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True),
    }


def dump_manifest(job: DataflowJob) -> str:
    return yaml.safe_dump(manifest_data(job), sort_keys=False)
