"""Side outputs: each one a StreamEdge of its own (with its OutputTag), built alike by the API
and a manifest, chained by Flink's rule like any edge, and checked per field."""

from __future__ import annotations

from typing import Any

import api_fns
import pytest

from dataflow_engine.api.common import Time, WatermarkStrategy
from dataflow_engine.api.datastream import (
    OutputTag,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from dataflow_engine.api.datastream.window import TumblingEventTimeWindows
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError
from dataflow_engine.render import Layer
from dataflow_engine.render.plan_text import plan_text

pytestmark = pytest.mark.unit


def _windowed(late: OutputTag | None) -> tuple[StreamExecutionEnvironment, Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    stamped = env.from_collection([["a", 1]]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            api_fns.event_time_of))
    windowed = stamped.key_by(0).window(TumblingEventTimeWindows.of(Time.seconds(5)))
    if late is not None:
        windowed = windowed.side_output_late_data(late)
    return env, windowed.reduce(api_fns.add_pairs).name("w")


def test_a_side_output_is_an_edge_with_its_tag() -> None:
    late = OutputTag("late")
    env, result = _windowed(late)
    result.print().name("main")
    result.get_side_output(late).map(api_fns.double).name("late-map").print().name("late")
    spec = env.build_spec()
    assert spec.pipeline[2].window is not None
    assert spec.pipeline[2].window.late_data_output == "late"
    late_map = next(op for op in spec.pipeline if op.name == "late-map")
    assert late_map.inputs[0].side_output == "late"
    assert load_manifest_text(env.to_manifest("side")).spec == spec
    compiled = compile_job(spec, "side")
    assert "sideOutput=late" in plan_text(compiled, Layer.STREAM)
    window = compiled.stream_graph.node("w")
    tags = sorted((e.output_tag or "") for e in window.out_edges)
    assert tags == ["", "late"]
    assert any(e.edge_id.endswith("_late") for e in window.out_edges)
    # Both outputs are forward edges of equal parallelism: both chain (Flink's rule).
    vertex = compiled.job_graph.vertex_of("w")
    assert {n.name for n in vertex.operators} == {"w", "main", "late-map", "late"}


def test_an_unread_late_data_output_is_noted_by_compile() -> None:
    env, result = _windowed(OutputTag("late"))
    result.print()
    compiled = env.compile("unread")
    assert any("lateDataOutput" in note and "'late'" in note
               for note in compiled.stream_graph.notes)
    assert "no operator reads side output 'late'" in plan_text(compiled, Layer.STREAM)


def test_get_side_output_takes_an_output_tag() -> None:
    _, result = _windowed(None)
    with pytest.raises(TypeError, match="OutputTag"):
        result.get_side_output("late")
    side = result.get_side_output(OutputTag("late"))
    with pytest.raises(TypeError, match="side output"):
        side.set_parallelism(2)


def _spec(source_type: str, side_output: str, via_union: bool = False) -> dict[str, Any]:
    producer: dict[str, Any] = {"name": "p", "type": source_type, "inputs": ["source"],
                                "function": "api_fns:double"}
    if source_type == "process":
        producer["inputs"] = [{"from": "source", "keyBy": 0}]
    pipeline: list[dict[str, Any]] = [
        {"name": "source", "type": "collection", "args": {"elements": [1]}}, producer]
    if via_union:
        pipeline.append({"name": "u", "type": "union", "inputs": ["p"]})
    pipeline.append({"name": "out", "type": "print",
                     "inputs": [{"from": "u" if via_union else "p", "sideOutput": side_output}]})
    return {"pipeline": pipeline}


def test_only_process_functions_and_windows_have_side_outputs() -> None:
    with pytest.raises(SpecError) as error:
        compile_job(parse_spec(_spec("map", "extra")), "bad")
    (problem,) = error.value.problems
    assert problem.path == "spec.pipeline[2].inputs[0].sideOutput"
    assert "has no side outputs" in problem.message
    compile_job(parse_spec(_spec("process", "extra")), "fine")


def test_a_union_has_no_side_outputs() -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(_spec("process", "extra", via_union=True))
    assert [p.path for p in error.value.problems] == ["spec.pipeline[3].inputs[0].sideOutput"]
