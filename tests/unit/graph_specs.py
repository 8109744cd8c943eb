"""Small builders for specs in graph tests, and task descriptors built from them."""

from __future__ import annotations

from typing import Any

from dataflow_engine.compiler.compile import CompiledJob, compile_job
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.spec.model import DataflowJobSpec


def spec(*pipeline: dict[str, Any], **settings: Any) -> DataflowJobSpec:
    return DataflowJobSpec.model_validate({"pipeline": list(pipeline), **settings})


def compiled(*pipeline: dict[str, Any], **settings: Any) -> CompiledJob:
    return compile_job(spec(*pipeline, **settings), "test")


def source(name: str = "src", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "sequence", "args": {"from": 1, "to": 10}, **extra}


def op(name: str, kind: str, *inputs: Any, **extra: Any) -> dict[str, Any]:
    functions = {"map": "identity", "flat_map": "split_words", "filter": "is_even",
                 "reduce": "add", "process": "mypkg.fns:count"}
    base: dict[str, Any] = {"name": name, "type": kind, "inputs": list(inputs)}
    if kind in functions:
        base["function"] = functions[kind]
    if kind in ("sum", "min", "max"):
        base["args"] = {"field": 1}
    return {**base, **extra}


def chains(job: CompiledJob) -> list[list[str]]:
    """Operator names of every JobVertex, head first."""
    return [[n.name for n in v.operators] for v in job.job_graph.vertices]


_STAMP = {"watermarkStrategy": {"type": "forMonotonousTimestamps", "timestampField": 1}}


def union_consumer() -> Any:
    """The TaskDescriptor of a keyed process function behind a union of two stamped inputs
    (two input channels), which emits ``(key, timestamp, its current watermark)``."""
    spec = parse_spec({
        "runtimeMode": "STREAMING",
        "pipeline": [
            {"name": "left", "type": "collection", "args": {"elements": [["a", 1]]}},
            {"name": "right", "type": "collection", "args": {"elements": [["b", 1]]}},
            {"name": "stamp-left", "type": "timestamps", "inputs": ["left"], **_STAMP},
            {"name": "stamp-right", "type": "timestamps", "inputs": ["right"], **_STAMP},
            {"name": "both", "type": "union", "inputs": ["stamp-left", "stamp-right"]},
            {"name": "seen", "type": "process", "function": "api_fns:WatermarkSeen",
             "inputs": [{"from": "both", "keyBy": 0}]},
            {"name": "out", "type": "collect", "inputs": ["seen"]},
        ],
    })
    plan = plan_job(compile_job(spec, "watermarks"))
    return next(v for v in plan.vertices.values() if v.vertex.head.name == "seen").descriptor
