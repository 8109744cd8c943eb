"""Small builders for specs in graph tests."""

from __future__ import annotations

from typing import Any

from dataflow_engine.compiler import CompiledJob, compile_job
from dataflow_engine.spec import DataflowJobSpec


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
