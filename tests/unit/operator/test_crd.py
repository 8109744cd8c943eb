"""The committed CRD is exactly what the spec model generates, and it is structural."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dataflow_operator.crd import (
    CRD_NAME,
    SNAPSHOT_CRD_NAME,
    crd_yaml,
    custom_resource_definition,
    snapshot_resource_definition,
)

pytestmark = pytest.mark.unit
CRD_FILE = Path(__file__).parents[3] / "crds" / f"{CRD_NAME}.yaml"


def test_committed_crd_matches_the_model() -> None:
    assert CRD_FILE.read_text() == crd_yaml(), "run: dataflow crd > crds/" + CRD_FILE.name


def test_committed_snapshot_crd_matches_the_model() -> None:
    committed = CRD_FILE.with_name(f"{SNAPSHOT_CRD_NAME}.yaml")
    assert committed.read_text() == crd_yaml("DataflowSnapshot"), (
        f"run: dataflow crd --kind DataflowSnapshot > crds/{committed.name}")


def test_the_snapshot_crd_is_structural_and_explains_itself() -> None:
    """Every spec and status field has a description (`kubectl explain dfsnap.spec`), the
    spec cannot change after creation, and `kubectl get dfsnap` shows job, trigger and state."""
    crd = snapshot_resource_definition()
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    for part in ("spec", "status"):
        for path, node in _walk(schema["properties"][part]["properties"]):
            if "type" in node and not path.endswith(".items"):
                assert node.get("description"), f"{part}{path} has no description"
    rules = [r["rule"] for r in schema["properties"]["spec"]["x-kubernetes-validations"]]
    assert "self == oldSelf" in rules
    assert [c["name"] for c in version["additionalPrinterColumns"]][:4] == [
        "Job", "Trigger", "State", "Checkpoint"]
    assert crd["spec"]["names"]["shortNames"] == ["dfsnap"]


def _walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.get("properties", {}).items():
            found += _walk(value, f"{path}.{key}")
        if isinstance(node.get("items"), dict):
            found += _walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            found += _walk(node["additionalProperties"], f"{path}{{}}")
    return found


def test_schema_is_structural() -> None:
    schema = custom_resource_definition()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in _walk(schema):
        open_ended = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
            "x-kubernetes-int-or-string")
        assert "type" in node or open_ended, f"{path} has no type"
        for forbidden in ("$ref", "anyOf", "oneOf", "allOf", "$defs", "title"):
            assert forbidden not in node, f"{path} has {forbidden}"
        if "properties" in node:
            assert "additionalProperties" not in node, path
        for exclusive in ("exclusiveMinimum", "exclusiveMaximum"):  # OpenAPI's: a flag
            assert isinstance(node.get(exclusive, False), bool), f"{path}.{exclusive}"


def test_every_spec_field_is_described() -> None:
    schema = custom_resource_definition()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    missing = [path for path, node in _walk(spec) if path and "description" not in node
               and not path.endswith("[]") and not path.endswith("{}")]
    assert missing == []


def test_no_default_inside_a_list_item_and_each_is_described() -> None:
    """A default filled into a list item would make every client-side re-apply a change."""
    schema = custom_resource_definition()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    in_lists = [(path, node) for path, node in _walk(spec) if "[]" in path]
    assert not [path for path, node in in_lists if "default" in node]
    described = {path: node["description"] for path, node in in_lists
                 if "Default:" in node.get("description", "")}
    assert described[".slotSharingGroups[].cpu"].endswith('Default: "1".')
    assert described[".pipeline[].startNewChain"].endswith("Default: false.")
    # Outside lists defaults stay: `kubectl get -o yaml` shows what the job runs with.
    assert spec["properties"]["parallelism"]["default"] == 1


def test_names_columns_and_rules() -> None:
    crd = custom_resource_definition()
    names = crd["spec"]["names"]
    assert (names["kind"], names["shortNames"], names["categories"]) == (
        "DataflowJob", ["dfj"], ["dataflow"])
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Status", "Parallelism", "Running", "Slots", "Restarts", "Age", "Reason", "Checkpoint"]
    assert version["additionalPrinterColumns"][-1]["priority"] == 1  # -o wide only
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["pipeline"]["x-kubernetes-list-map-keys"] == ["name"]
    assert any("maxParallelism" in r["rule"] for r in spec["x-kubernetes-validations"])
    assert yaml.safe_load(crd_yaml()) == crd


def _spec_schema() -> dict[str, Any]:
    schema = custom_resource_definition()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec: dict[str, Any] = schema["properties"]["spec"]
    return spec


@pytest.mark.parametrize("path", [".slotSharingGroups[].cpu", ".slotSharingGroups[].memory",
                                  ".driver.cpu", ".driver.memory"])
def test_a_zero_quantity_is_refused_at_admission(path: str) -> None:
    node = dict(_walk(_spec_schema()))[path]
    [rule] = node["x-kubernetes-validations"]
    assert rule["message"] == f"{path.rsplit('.', 1)[1]} must be greater than zero"
    # CEL's matches() is RE2's search, as Python's re.search is for this expression.
    zero = re.fullmatch(r"!self\.matches\('(.*)'\)", rule["rule"])
    assert zero is not None
    assert [q for q in ("0", "0m", "0.0", "000Gi", "1", "500m", "0.5", "1Gi", "10", "0.01Mi")
            if re.search(zero.group(1), q)] == ["0", "0m", "0.0", "000Gi"]
    assert node["maxLength"] == 64  # bounds the rule's cost


def test_checkpointing_a_batch_job_is_refused_at_admission() -> None:
    rules = {r["fieldPath"]: r for r in _spec_schema()["x-kubernetes-validations"]}
    assert rules[".checkpointing"]["rule"] == (
        "!has(self.checkpointing) || !has(self.runtimeMode) || self.runtimeMode != 'BATCH'")
    assert "a BATCH job takes no checkpoints" in rules[".checkpointing"]["message"]


def _violations(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """Where ``value`` breaks the types of a structural schema, as the API server checks a
    merge patch of it: a null property removes the property; a null item needs ``nullable``."""
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: null"]
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get(
            "x-kubernetes-int-or-string"):
        return []
    kind = schema.get("type")
    expected = {"object": dict, "array": list, "string": str, "boolean": bool,
                "integer": int, "number": (int, float)}[kind]
    if not isinstance(value, expected) or (kind in ("integer", "number")
                                           and isinstance(value, bool)):
        return [f"{path}: {value!r} is not {kind}"]
    if kind == "array":
        return [v for i, item in enumerate(value)
                for v in _violations(item, schema["items"], f"{path}[{i}]")]
    if kind == "object":
        fields = schema.get("properties")
        return [v for key, item in value.items() if item is not None for v in _violations(
            item, fields[key] if fields is not None else schema["additionalProperties"],
            f"{path}.{key}")]
    return []


def test_an_autoscalers_status_is_one_the_api_server_accepts() -> None:
    """Its samples keep null for a vertex's unmeasured arrivals and backlog."""
    from dataflow_operator.autoscaler.algorithm import Recommendation
    from dataflow_operator.autoscaler.policy import (
        AutoscalerMemory,
        Decision,
        MetricSample,
        PendingScaleDown,
        VertexSample,
    )
    from dataflow_operator.autoscaler.state import status_of
    from dataflow_operator.status.model import DataflowJobStatus

    memory = AutoscalerMemory(
        samples=(MetricSample(1.8e9, {"a" * 32: VertexSample(10, 10, 5, 100, 3),
                                      "b" * 32: VertexSample(10, 0, 5)}),),
        decisions=(Decision(1.8e9, (Recommendation("b" * 32, 1, 4, 10.0, None, 0.5, None,
                                                   "scale up"),), ()),),
        pending={"a" * 32: PendingScaleDown(1.8e9, 2)}, overrides={"b" * 32: 4})
    status = DataflowJobStatus(autoscaler=status_of(memory, None, "collecting", False))
    document = status.model_dump(mode="json", by_alias=True)
    assert None in document["autoscaler"]["samples"][0]["vertices"]["b" * 32]
    schema = custom_resource_definition()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _violations(document, schema["properties"]["status"], "status") == []
