"""The DataflowJob and DataflowSnapshot CustomResourceDefinitions, generated from their spec
and status models.

Pydantic's JSON Schema is turned into a *structural* OpenAPI schema: references inlined,
optional values unwrapped, free-form maps marked to preserve their fields, and CEL rules added
for what a schema alone cannot say. ``crds/`` holds the output; a test keeps the two equal.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from pydantic import BaseModel

from dataflow_engine.spec.catalog import CATALOG
from dataflow_engine.spec.model import (
    API_GROUP,
    API_VERSION,
    KIND,
    MAX_JOB_NAME_LENGTH,
    DataflowJobSpec,
)
from dataflow_operator.snapshots.model import (
    SNAPSHOT_KIND,
    SNAPSHOT_PLURAL,
    DataflowSnapshotSpec,
    DataflowSnapshotStatus,
)
from dataflow_operator.status.model import DataflowJobStatus

PLURAL = "dataflowjobs"
SINGULAR = "dataflowjob"
SHORT_NAMES = ["dfj"]
CATEGORIES = ["dataflow"]
CRD_NAME = f"{PLURAL}.{API_GROUP}"
SNAPSHOT_SHORT_NAMES = ["dfsnap"]
SNAPSHOT_CRD_NAME = f"{SNAPSHOT_PLURAL}.{API_GROUP}"
#: Bounds that keep CEL rules within the API server's cost budget.
MAX_OPERATORS = 1000
MAX_INPUTS = 64

_DROPPED_KEYS = {"title", "$defs"}

INPUT_DESCRIPTION = (
    "An input: the upstream operator's name, or an object {from: NAME, partitioning: "
    "forward|rebalance|rescale|shuffle|broadcast|global} or {from: NAME, keyBy: FIELD-INDEX | "
    "FIELD-NAME | 'module:callable'}, optionally with exchangeMode: pipelined|batch. Default "
    "partitioning: forward when parallelisms match, else rebalance."
)

_SINK_TYPES = [str(kind.operator_type) for kind in CATALOG.values() if kind.is_sink]
SPEC_RULES = [
    {"rule": "!has(self.parallelism) || !has(self.maxParallelism) || "
             "self.parallelism <= self.maxParallelism",
     "message": "parallelism must not exceed maxParallelism", "fieldPath": ".parallelism"},
    {"rule": "self.pipeline.all(o, !has(o.parallelism) || has(o.maxParallelism) || "
             "!has(self.maxParallelism) || o.parallelism <= self.maxParallelism)",
     "message": "an operator's parallelism must not exceed spec.maxParallelism",
     "fieldPath": ".pipeline"},
    {"rule": f"self.pipeline.exists(o, o.type in {_SINK_TYPES!r})",
     "message": f"the pipeline needs a sink ({', '.join(_SINK_TYPES)})",
     "fieldPath": ".pipeline"},
    # Whether AUTOMATIC is BATCH depends on the sources' args, which the schema leaves open:
    # the operator refuses that case.
    {"rule": "!has(self.checkpointing) || !has(self.runtimeMode) || self.runtimeMode != 'BATCH'",
     "message": "a BATCH job takes no checkpoints (Flink ignores them there): remove "
                "checkpointing, or set runtimeMode STREAMING",
     "fieldPath": ".checkpointing"},
]
OPERATOR_RULES = [
    {"rule": "!has(self.parallelism) || !has(self.maxParallelism) || "
             "self.parallelism <= self.maxParallelism",
     "message": "parallelism must not exceed maxParallelism", "fieldPath": ".parallelism"},
]

#: A quantity that is zero. The floors above zero are the operator's to check: an executor's
#: memory is a slot's times slotsPerExecutor, and CEL's quantity library is newer than the
#: Kubernetes versions the chart supports.
ZERO_QUANTITY = "^[0.]+[a-zA-Z]*$"
#: Bounds the cost of the rule that refuses a zero quantity.
MAX_QUANTITY_LENGTH = 64


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_resolve(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = _resolve(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_resolve(extra, defs)}
    return {k: _resolve(v, defs) for k, v in node.items() if k not in _DROPPED_KEYS}


def _structural(node: dict[str, Any], item: bool = False) -> dict[str, Any]:
    """Rewrites one resolved JSON Schema node into the structural subset Kubernetes accepts;
    an ``item`` of an array that may be null is ``nullable`` (a property that may be is left
    out instead)."""
    node = dict(node)
    variants = node.pop("anyOf", None)
    if variants is not None:
        non_null = [v for v in variants if v.get("type") != "null"]
        types = {v.get("type") for v in non_null}
        if len(non_null) == 1:
            node = {**non_null[0], **node}
            if item and len(non_null) < len(variants):
                node["nullable"] = True
        elif types == {"integer", "string"}:
            node["x-kubernetes-int-or-string"] = True
        else:
            node["x-kubernetes-preserve-unknown-fields"] = True
        if node.get("default", 0) is None:
            node.pop("default")
    if isinstance(node.get("default"), (dict, list)) or node.get("default", 0) is None:
        node.pop("default")
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if not isinstance(node.get(exclusive, True), bool):  # JSON Schema's form: OpenAPI's
            node[bound], node[exclusive] = node[exclusive], True
    if node.get("type") == "object":
        properties = node.get("properties")
        extra = node.pop("additionalProperties", None)
        if properties is not None:
            node["properties"] = {k: _structural(v) for k, v in properties.items()}
        elif isinstance(extra, dict) and extra:
            node["additionalProperties"] = _structural(extra)
        else:
            node["x-kubernetes-preserve-unknown-fields"] = True
    if node.get("type") == "array" and "items" in node:
        node["items"] = _structural(node["items"], item=True)
    if "items" not in node and node.get("type") == "array":
        node["items"] = {"x-kubernetes-preserve-unknown-fields": True}
    if "type" not in node and not node.get("x-kubernetes-int-or-string"):
        node["x-kubernetes-preserve-unknown-fields"] = True
    node.pop("required", None) if node.get("required") == [] else None
    return node


def _no_defaults_in_lists(node: dict[str, Any], in_list: bool = False) -> None:
    """Moves defaults inside list items into the description. A JSON merge patch, which
    client-side `kubectl apply` sends for custom resources, replaces a list whole: a default the
    API server filled into a list item makes every re-apply of an unchanged file a change
    ("configured"). The operator applies the same defaults when it reads the spec."""
    if in_list and "default" in node:
        default = json.dumps(node.pop("default"))
        node["description"] = f"{node.get('description', '').rstrip('.')}. Default: {default}."
    for child in node.get("properties", {}).values():
        _no_defaults_in_lists(child, in_list)
    if isinstance(node.get("items"), dict):
        _no_defaults_in_lists(node["items"], True)
    if isinstance(node.get("additionalProperties"), dict):
        _no_defaults_in_lists(node["additionalProperties"], in_list)


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return _structural(_resolve(schema, schema.get("$defs", {})))


def spec_schema() -> dict[str, Any]:
    schema = model_schema(DataflowJobSpec)
    schema["description"] = (DataflowJobSpec.__doc__ or "").strip()
    pipeline = schema["properties"]["pipeline"]
    pipeline["maxItems"] = MAX_OPERATORS
    _list_map(pipeline, "name")
    operator = pipeline["items"]
    operator["x-kubernetes-validations"] = OPERATOR_RULES
    operator["properties"]["name"]["maxLength"] = 63
    inputs = operator["properties"]["inputs"]
    inputs["maxItems"] = MAX_INPUTS
    # An input is a string or an object, which no structural type can say: keep it open and
    # describe it; the operator validates it fully and reports problems in status. CEL cannot
    # see untyped items, so rules about inputs live in the compiler, not here.
    inputs["items"] = {"x-kubernetes-preserve-unknown-fields": True,
                       "description": INPUT_DESCRIPTION}
    groups = schema["properties"]["slotSharingGroups"]
    _list_map(groups, "name")
    groups["maxItems"] = 64
    _refuse_zero(groups["items"], "cpu", "memory")
    _refuse_zero(schema["properties"]["driver"], "cpu", "memory")
    schema["x-kubernetes-validations"] = SPEC_RULES
    _no_defaults_in_lists(schema)
    return schema


def _list_map(node: dict[str, Any], key: str) -> None:
    """A list whose items a merge (server-side apply, a merge patch) matches by ``key``."""
    node["x-kubernetes-list-type"] = "map"
    node["x-kubernetes-list-map-keys"] = [key]


def _refuse_zero(node: dict[str, Any], *quantities: str) -> None:
    for name in quantities:
        field = node["properties"][name]
        field["maxLength"] = MAX_QUANTITY_LENGTH
        field["x-kubernetes-validations"] = [{"rule": f"!self.matches('{ZERO_QUANTITY}')",
                                              "message": f"{name} must be greater than zero"}]


def status_schema() -> dict[str, Any]:
    schema = model_schema(DataflowJobStatus)
    schema["description"] = "Observed state: JobStatus, conditions, plan and every subtask."
    _list_map(schema["properties"]["conditions"], "type")
    return schema


PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Status", "type": "string", "jsonPath": ".status.jobStatus",
     "description": "Flink's JobStatus"},
    {"name": "Parallelism", "type": "integer", "jsonPath": ".spec.parallelism"},
    {"name": "Running", "type": "string", "jsonPath": ".status.subtasks",
     "description": "Running/total subtasks (ExecutionVertices)"},
    {"name": "Slots", "type": "integer", "jsonPath": ".status.plan.totalSlots"},
    {"name": "Restarts", "type": "integer", "jsonPath": ".status.restarts"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Reason", "type": "string", "priority": 1,
     "jsonPath": '.status.conditions[?(@.type=="Running")].reason',
     "description": "Why the job runs or does not (the Running condition's reason)"},
    {"name": "Checkpoint", "type": "integer", "priority": 1,
     "jsonPath": ".status.checkpoints.lastCompleted.id",
     "description": "The latest completed checkpoint of a continuous job"},
]


#: Every object a job owns is named after it ("<name>-driver", "<name>-plan", Spark's
#: "<name>-exec-<n>"): refuse names those would not fit at admission, not at provisioning.
NAME_RULES = [{
    "rule": f"self.metadata.name.size() <= {MAX_JOB_NAME_LENGTH} && "
            "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
    "message": f"metadata.name must be a DNS label of at most {MAX_JOB_NAME_LENGTH} characters "
               "(lower-case letters, digits and '-', no dots): the job's pods, Service and "
               "ConfigMap are named after it",
}]


def _definition(kind: str, plural: str, short_names: list[str], description: str,
                spec: dict[str, Any], status: dict[str, Any], columns: list[dict[str, Any]],
                rules: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{API_GROUP}",
                     "labels": {"app.kubernetes.io/part-of": "dataflow"}},
        "spec": {
            "group": API_GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural,
                      "singular": kind.lower(), "shortNames": short_names,
                      "categories": CATEGORIES},
            "versions": [{
                "name": API_VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": description,
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec,
                        "status": status,
                    },
                    "required": ["spec"],
                    **({"x-kubernetes-validations": rules} if rules else {}),
                }},
            }],
        },
    }


def custom_resource_definition() -> dict[str, Any]:
    return _definition(KIND, PLURAL, SHORT_NAMES, "A dataflow job: a pipeline compiled "
                       "through Flink's graph layers and run on Apache Spark.", spec_schema(),
                       status_schema(), PRINTER_COLUMNS, NAME_RULES)


SNAPSHOT_PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Job", "type": "string", "jsonPath": ".spec.jobReference.name"},
    {"name": "Trigger", "type": "string", "jsonPath": ".status.triggerType",
     "description": "user, periodic, upgrade, suspend, manual or import"},
    {"name": "State", "type": "string", "jsonPath": ".status.state"},
    {"name": "Checkpoint", "type": "integer", "jsonPath": ".status.checkpointId"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "Path", "type": "string", "priority": 1, "jsonPath": ".status.path"},
    {"name": "Error", "type": "string", "priority": 1, "jsonPath": ".status.error"},
]
SNAPSHOT_SPEC_RULES = [
    {"rule": "has(self.savepoint) != has(self.checkpoint)",
     "message": "give exactly one of savepoint and checkpoint"},
    {"rule": "self == oldSelf",
     "message": "a DataflowSnapshot's spec is immutable: create another one"},
]
SAVEPOINT_RULES = [
    {"rule": "has(self.path) == (has(self.alreadyExists) && self.alreadyExists)",
     "message": "path is given exactly when alreadyExists imports a savepoint taken elsewhere"},
]


def snapshot_resource_definition() -> dict[str, Any]:
    spec = model_schema(DataflowSnapshotSpec)
    spec["description"] = (DataflowSnapshotSpec.__doc__ or "").strip()
    spec["x-kubernetes-validations"] = SNAPSHOT_SPEC_RULES
    spec["properties"]["savepoint"]["x-kubernetes-validations"] = SAVEPOINT_RULES
    status = model_schema(DataflowSnapshotStatus)
    status["description"] = "How the snapshot went: its state, path and conditions."
    _list_map(status["properties"]["conditions"], "type")
    return _definition(SNAPSHOT_KIND, SNAPSHOT_PLURAL, SNAPSHOT_SHORT_NAMES, (
        "A savepoint or checkpoint of a DataflowJob of this namespace: taken when created, or "
        "imported (savepoint.alreadyExists)."), spec, status, SNAPSHOT_PRINTER_COLUMNS, [])


#: Each custom resource's definition, by kind (`dataflow crd --kind`).
DEFINITIONS = {KIND: custom_resource_definition, SNAPSHOT_KIND: snapshot_resource_definition}


def crd_yaml(kind: str = KIND) -> str:
    header = "# Generated by `dataflow crd` from the spec model; do not edit by hand.\n"
    return header + yaml.safe_dump(DEFINITIONS[kind](), sort_keys=False, width=100)
