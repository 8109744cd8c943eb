"""Two-input operators in the spec: ``connect`` writes two inputs (each may be a union), the
StreamEdges carry input numbers 1 and 2, the JobVertex is a TwoInputStreamTask, and a wrong
number of inputs is reported."""

from __future__ import annotations

from typing import Any

import api_fns
import pytest

from dataflow_engine.api.common import Time, WatermarkStrategy
from dataflow_engine.api.datastream import StreamExecutionEnvironment
from dataflow_engine.api.datastream.state import MapStateDescriptor
from dataflow_engine.api.datastream.window import TumblingEventTimeWindows
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError
from dataflow_engine.graph.job_graph import InvokableKind

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


def _stamped_pair() -> tuple[StreamExecutionEnvironment, Any, Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        api_fns.event_time_of)
    a = env.from_collection([["a", 1]]).assign_timestamps_and_watermarks(strategy)
    b = env.from_collection([["a", 2]]).assign_timestamps_and_watermarks(strategy)
    return env, a, b


def test_an_interval_join_round_trips_with_its_bounds() -> None:
    env, a, b = _stamped_pair()
    (a.key_by(0).interval_join(b.key_by(0)).between(Time.seconds(-2), Time.milliseconds(500))
     .upper_bound_exclusive().process(api_fns.PairJoin()).name("joined").print())
    spec = env.build_spec()
    joined = next(op for op in spec.pipeline if op.name == "joined")
    assert joined.interval_join is not None
    assert joined.interval_join.model_dump(by_alias=True, exclude_defaults=True) == {
        "lowerBound": "-2s", "upperBound": "500ms", "upperBoundExclusive": True}
    assert load_manifest_text(env.to_manifest("joined")).spec == spec
    node = compile_job(spec, "joined").stream_graph.node("joined")
    assert node.operator_name == "Interval Join"
    assert node.args["intervalJoin"] == {"lowerBound": -2000, "upperBound": 499}


def test_an_interval_join_needs_event_time_on_both_inputs() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    a = env.from_collection([["a", 1]]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            api_fns.event_time_of))
    b = env.from_collection([["a", 2]])
    a.key_by(0).interval_join(b.key_by(0)).between(0, 10).process(api_fns.PairJoin()).print()
    with pytest.raises(SpecError) as error:
        env.compile("unstamped")
    assert [p.path for p in error.value.problems] == ["spec.pipeline[3].inputs[1]"]


def test_a_window_join_is_one_two_input_window_operator() -> None:
    env, a, b = _stamped_pair()
    (a.join(b).where(0).equal_to(0).window(TumblingEventTimeWindows.of(Time.seconds(5)))
     .apply(api_fns.PairJoin()).name("joined").print())
    spec = env.build_spec()
    joined = next(op for op in spec.pipeline if op.name == "joined")
    assert joined.type.value == "window_join"
    assert joined.window is not None and joined.window.kind.value == "join"
    assert [i.key_by for i in joined.inputs] == [0, 0]
    assert load_manifest_text(env.to_manifest("joined")).spec == spec
    graph = compile_job(spec, "joined").stream_graph
    assert graph.node("joined").operator_name == (
        "Window(TumblingEventTimeWindows(5000), EventTimeTrigger, PairJoin)")


def test_join_kinds_belong_to_window_join() -> None:
    spec = {"pipeline": [
        {"name": "a", "type": "collection", "args": {"elements": [1]}},
        {"name": "w", "type": "window", "inputs": [{"from": "a", "keyBy": 0}],
         "function": "api_fns:PairJoin",
         "window": {"assigner": {"type": "tumbling", "time": "processing", "size": "1s"},
                    "kind": "join"}},
        {"name": "out", "type": "print", "inputs": ["w"]},
    ]}
    with pytest.raises(SpecError) as error:
        parse_spec(spec)
    assert [p.path for p in error.value.problems] == ["spec.pipeline[1].window.kind"]


def test_a_broadcast_process_needs_a_broadcast_input_2_and_its_states() -> None:
    spec: dict[str, Any] = {"pipeline": [
        {"name": "a", "type": "collection", "args": {"elements": [1]}},
        {"name": "b", "type": "collection", "args": {"elements": [2]}},
        {"name": "p", "type": "broadcast_process", "function": "api_fns:Both",
         "inputs": [{"from": "a", "keyBy": 0}, "b"], "broadcastStates": ["rules"]},
        {"name": "out", "type": "print", "inputs": ["p"]},
    ]}
    with pytest.raises(SpecError) as error:
        compile_job(parse_spec(spec), "bad")
    assert [p.path for p in error.value.problems] == ["spec.pipeline[2].inputs[1].partitioning"]
    spec["pipeline"][2]["inputs"][1] = {"from": "b", "partitioning": "broadcast"}
    node = compile_job(parse_spec(spec), "good").stream_graph.node("p")
    assert node.is_keyed and node.operator_name == "Co-Process-Broadcast-Keyed"
    del spec["pipeline"][2]["broadcastStates"]
    with pytest.raises(SpecError) as error:
        parse_spec(spec)
    assert [p.path for p in error.value.problems] == ["spec.pipeline[2].broadcastStates"]


def test_broadcast_with_descriptors_round_trips() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    events, rules = env.from_collection([1]), env.from_collection([2])
    events.connect(rules.broadcast(MapStateDescriptor("rules"), MapStateDescriptor("limits"))
                   ).process(api_fns.Both()).name("p").print()
    spec = env.build_spec()
    p = next(op for op in spec.pipeline if op.name == "p")
    assert p.broadcast_states == ["rules", "limits"]
    assert p.inputs[1].partitioning is not None and p.inputs[1].partitioning.value == (
        "broadcast")
    assert load_manifest_text(env.to_manifest("b")).spec == spec
    assert env.compile("b").stream_graph.node("p").operator_name == "Co-Process-Broadcast"
