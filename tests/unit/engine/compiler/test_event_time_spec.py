"""Timestamps and watermarks in the spec: the API and a manifest build the same operator, the
graph layers name it as Flink does and know which streams carry event time, and misuse is
reported per field."""

from __future__ import annotations

from typing import Any

import api_fns
import pytest

from dataflow_engine.api.common import Duration, Time, WatermarkStrategy
from dataflow_engine.api.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError

pytestmark = pytest.mark.unit


def _environment() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.get_config().set_auto_watermark_interval(50)
    return env


def test_api_and_manifest_build_the_same_timestamps_operator() -> None:
    env = _environment()
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
                .with_idleness(Time.minutes(1))
                .with_timestamp_assigner(api_fns.event_time_of))
    (env.from_collection([["a", 1]]).assign_timestamps_and_watermarks(strategy)
     .key_by(0).sum(1).print())
    spec = env.build_spec()
    stamp = spec.pipeline[1]
    assert stamp.type.value == "timestamps"
    assert stamp.function == "api_fns:event_time_of"
    assert stamp.watermark_strategy is not None
    assert stamp.watermark_strategy.model_dump(by_alias=True, exclude_none=True) == {
        "type": "forBoundedOutOfOrderness", "maxOutOfOrderness": "5s", "idleness": "1m"}
    assert spec.auto_watermark_interval == "50ms"
    manifest = env.to_manifest("stamped")
    assert load_manifest_text(manifest).spec == spec


def test_generator_strategy_round_trips_and_lambdas_are_refused_by_to_manifest() -> None:
    env = _environment()
    strategy = (WatermarkStrategy.for_generator(api_fns.EveryRecordWatermark)
                .with_timestamp_assigner(lambda value, ts: value[1]))
    env.from_collection([["a", 1]]).assign_timestamps_and_watermarks(strategy).print()
    spec = env.build_spec()
    assert spec.pipeline[1].watermark_strategy is not None
    assert spec.pipeline[1].watermark_strategy.generator == "api_fns:EveryRecordWatermark"
    with pytest.raises(SpecError) as error:
        env.to_manifest("lambda-assigner")
    assert error.value.problems[0].path == "spec.pipeline[1].function"
    assert "lambda" in error.value.problems[0].message


def test_compile_names_the_operator_and_marks_event_time_streams() -> None:
    env = _environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        api_fns.event_time_of)
    stamped = env.from_collection([["a", 1]]).map(api_fns.double)
    stamped.assign_timestamps_and_watermarks(strategy).name("stamp").key_by(0).sum(1).print()
    compiled = env.compile("named")
    names = [vertex.name for vertex in compiled.job_graph.vertices]
    assert "Source: Collection Source -> Map -> Timestamps/Watermarks" in names
    nodes = {node.name: node for node in compiled.stream_graph.nodes.values()}
    assert not nodes["map-2"].event_time
    assert nodes["stamp"].event_time
    assert all(n.event_time for n in compiled.stream_graph.nodes.values()
               if n.operator_type.value in ("sum", "print"))


def test_an_assigner_is_needed() -> None:
    env = _environment()
    with pytest.raises(ValueError, match="with_timestamp_assigner"):
        env.from_collection([1]).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps())


def _pipeline(stamp: dict[str, Any]) -> dict[str, Any]:
    return {"pipeline": [
        {"name": "source", "type": "collection", "args": {"elements": [1]}},
        {"name": "stamp", "type": "timestamps", "inputs": ["source"], **stamp},
        {"name": "out", "type": "print", "inputs": ["stamp"]},
    ]}


@pytest.mark.parametrize(("stamp", "path", "message"), [
    ({"function": "api_fns:event_time_of"}, "spec.pipeline[1].watermarkStrategy",
     "needs a watermarkStrategy"),
    ({"function": "api_fns:event_time_of",
      "watermarkStrategy": {"type": "forMonotonousTimestamps", "timestampField": 1}},
     "spec.pipeline[1].function", "not both"),
    ({"function": "api_fns:event_time_of",
      "watermarkStrategy": {"type": "forBoundedOutOfOrderness"}},
     "spec.pipeline[1].watermarkStrategy", "maxOutOfOrderness"),
    ({"watermarkStrategy": {"type": "forGenerator", "generator": "not a ref",
                            "timestampField": 0}},
     "spec.pipeline[1].watermarkStrategy.generator", "malformed reference"),
    ({"watermarkStrategy": {"type": "forMonotonousTimestamps", "timestampField": 0,
                            "maxOutOfOrderness": "1s"}},
     "spec.pipeline[1].watermarkStrategy", "belongs to"),
])
def test_misuse_is_reported_per_field(stamp: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(SpecError) as error:
        parse_spec(_pipeline(stamp))
    problems = error.value.problems
    assert any(p.path == path and message in p.message for p in problems), problems


def test_a_watermark_strategy_belongs_to_a_timestamps_operator() -> None:
    data = _pipeline({"watermarkStrategy": {"type": "forMonotonousTimestamps",
                                            "timestampField": 0}})
    data["pipeline"][2]["watermarkStrategy"] = {"type": "noWatermarks", "timestampField": 0}
    with pytest.raises(SpecError) as error:
        parse_spec(data)
    assert [p.path for p in error.value.problems] == ["spec.pipeline[2].watermarkStrategy"]


def test_a_timestamp_field_compiles() -> None:
    spec = parse_spec(_pipeline({"watermarkStrategy": {"type": "forMonotonousTimestamps",
                                                       "timestampField": 0}}))
    compiled = compile_job(spec, "field")
    assert compiled.stream_graph.node("stamp").args["watermarkStrategy"] == {
        "type": "forMonotonousTimestamps", "timestampField": 0}


def test_process_is_keyed_after_key_by_only() -> None:
    env = _environment()
    numbers = env.from_collection([["a", 1]])
    numbers.process(api_fns.double).name("plain").print()
    numbers.key_by(0).process(api_fns.double).name("keyed").print()
    compiled = env.compile("process")
    plain, keyed = compiled.stream_graph.node("plain"), compiled.stream_graph.node("keyed")
    assert (plain.operator_name, plain.is_keyed) == ("Process", False)
    assert (keyed.operator_name, keyed.is_keyed) == ("KeyedProcess", True)


def test_without_an_assigner_the_records_own_timestamps_are_used() -> None:
    from dataflow_engine.runtime.streamoperators.timestamps import _record_timestamp
    from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP

    parse_spec(_pipeline({"watermarkStrategy": {"type": "forMonotonousTimestamps"}}))
    assert _record_timestamp("record", 1234) == 1234
    with pytest.raises(ValueError, match="no timestamp of its own"):
        _record_timestamp("record", MIN_TIMESTAMP)
