"""Two-input operators in the spec: ``connect`` writes two inputs (each may be a union), the
StreamEdges carry input numbers 1 and 2, the JobVertex is a TwoInputStreamTask, and a wrong
number of inputs is reported."""

from __future__ import annotations

from typing import Any

import api_fns
import pytest

from dataflow_engine.api.datastream import StreamExecutionEnvironment
from dataflow_engine.compiler import compile_job
from dataflow_engine.errors import SpecError
from dataflow_engine.graph.job_graph import InvokableKind
from dataflow_engine.manifest import load_manifest_text
from dataflow_engine.validation import parse_spec

pytestmark = pytest.mark.unit


def test_connect_builds_a_two_input_operator() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    a, b, c = env.from_collection([1]), env.from_collection([2]), env.from_sequence(1, 3)
    a.union(b).connect(c).map(api_fns.Both()).name("both").print()
    spec = env.build_spec()
    both = next(op for op in spec.pipeline if op.name == "both")
    assert both.function == "api_fns:Both" and len(both.inputs) == 2
    assert load_manifest_text(env.to_manifest("two")).spec == spec
    compiled = compile_job(spec, "two")
    node = compiled.stream_graph.node("both")
    numbers = sorted((compiled.stream_graph.nodes[e.source_id].name, e.type_number)
                     for e in node.in_edges)
    assert numbers == [("collection-1", 1), ("collection-2", 1), ("sequence-3", 2)]
    vertex = compiled.job_graph.vertex_of("both")
    assert vertex.invokable is InvokableKind.TWO_INPUT_STREAM_TASK
    assert vertex.head.operator_name == "Co-Map"


def test_connected_keyed_streams_make_a_keyed_co_process() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    a, b = env.from_collection([1]), env.from_collection([2])
    a.connect(b).key_by(api_fns.double, api_fns.double).process(api_fns.Both()).name(
        "keyed").print()
    a.connect(b).process(api_fns.Both()).name("plain").print()
    graph = env.compile("co").stream_graph
    assert graph.node("keyed").operator_name == "Co-Keyed-Process"
    assert graph.node("keyed").is_keyed
    assert graph.node("plain").operator_name == "Co-Process"


@pytest.mark.parametrize("inputs", [["a"], ["a", "a", "a"]])
def test_a_two_input_operator_needs_two_inputs(inputs: list[Any]) -> None:
    spec = {"pipeline": [
        {"name": "a", "type": "collection", "args": {"elements": [1]}},
        {"name": "both", "type": "co_map", "inputs": inputs, "function": "api_fns:Both"},
        {"name": "out", "type": "print", "inputs": ["both"]},
    ]}
    with pytest.raises(SpecError) as error:
        parse_spec(spec)
    (problem,) = error.value.problems
    assert problem.path == "spec.pipeline[1].inputs"
    assert "takes two inputs" in problem.message
