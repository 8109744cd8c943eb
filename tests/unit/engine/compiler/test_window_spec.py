"""Windows in the spec: the Python API writes what a manifest holds, compile names the window
operator as Flink does, and every misuse is reported with its field."""

from __future__ import annotations

from typing import Any

import api_fns
import pytest

from dataflow_engine.api.common import Time, WatermarkStrategy
from dataflow_engine.api.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from dataflow_engine.api.datastream.window import (
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    PurgingTrigger,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
)
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError

pytestmark = pytest.mark.unit


def _stamped() -> tuple[StreamExecutionEnvironment, Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        api_fns.event_time_of)
    return env, env.from_collection([["a", 1]]).assign_timestamps_and_watermarks(strategy)


def test_a_windowed_reduce_round_trips_and_is_named_as_in_flink() -> None:
    env, stamped = _stamped()
    (stamped.key_by(0).window(TumblingEventTimeWindows.of(Time.minutes(1)))
     .allowed_lateness(Time.seconds(10)).reduce(api_fns.add_pairs, api_fns.Contents())
     .print())
    spec = env.build_spec()
    window = spec.pipeline[2].window
    assert window is not None
    assert window.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True) == {
        "assigner": {"type": "tumbling", "time": "event", "size": "1m"}, "kind": "reduce",
        "windowFunction": "api_fns:Contents", "allowedLateness": "10s"}
    assert load_manifest_text(env.to_manifest("windowed")).spec == spec
    names = [vertex.name for vertex in env.compile("windowed").job_graph.vertices]
    assert ("Window(TumblingEventTimeWindows(60000), EventTimeTrigger, add_pairs, Contents) "
            "-> Sink: Print to Std. Out") in names


def test_count_windows_are_global_windows_with_count_triggers() -> None:
    env, stamped = _stamped()
    stamped.key_by(0).count_window(5, 2).process(api_fns.Contents()).print()
    stamped.key_by(0).count_window(3).reduce(api_fns.add_pairs).print()
    spec = env.build_spec()
    sliding, tumbling = (op.window for op in spec.pipeline if op.window is not None)
    assert sliding is not None and tumbling is not None
    assert sliding.model_dump(by_alias=True, exclude_none=True) == {
        "assigner": {"type": "global"}, "kind": "process",
        "trigger": {"type": "count", "count": 2, "purging": False},
        "evictor": {"type": "count", "maxCount": 5, "doEvictAfter": False}}
    assert tumbling.trigger is not None and tumbling.trigger.purging
    names = [v.name for v in compile_job(spec, "counts").job_graph.vertices]
    assert any(n.startswith("Window(GlobalWindows(), CountTrigger, CountEvictor(5), Contents)")
               for n in names), names


def test_window_all_runs_in_one_subtask() -> None:
    env, stamped = _stamped()
    env.set_parallelism(4)
    (stamped.window_all(SlidingProcessingTimeWindows.of(Time.seconds(10), Time.seconds(5)))
     .trigger(PurgingTrigger.of(CountTrigger.of(2))).evictor(CountEvictor.of(3))
     .process(api_fns.Contents()).print())
    compiled = env.compile("all")
    node = compiled.stream_graph.node("window_all-3")
    assert node.parallelism == 1
    assert node.event_time  # results carry the window's end as timestamp


def test_sessions_with_a_gap_extractor_name_it() -> None:
    env, stamped = _stamped()
    (stamped.key_by(0).window(EventTimeSessionWindows.with_dynamic_gap(api_fns.double))
     .process(api_fns.Contents()).print())
    window = env.build_spec().pipeline[2].window
    assert window is not None and window.assigner.gap_extractor == "api_fns:double"


def _window_spec(window: dict[str, Any], *, stamped: bool = True, keyed: bool = True,
                 operator_type: str = "window") -> dict[str, Any]:
    edge: dict[str, Any] = {"from": "stamp" if stamped else "source"}
    if keyed:
        edge["keyBy"] = 0
    pipeline: list[dict[str, Any]] = [
        {"name": "source", "type": "collection", "args": {"elements": [["a", 1]]}},
        {"name": "stamp", "type": "timestamps", "inputs": ["source"],
         "watermarkStrategy": {"type": "forMonotonousTimestamps", "timestampField": 1}},
        {"name": "w", "type": operator_type, "inputs": [edge], "function": "api_fns:add_pairs",
         "window": window},
        {"name": "out", "type": "print", "inputs": ["w"]},
    ]
    return {"pipeline": pipeline}


TUMBLING = {"type": "tumbling", "time": "event", "size": "1m"}


@pytest.mark.parametrize(("spec", "path", "message"), [
    (_window_spec({"assigner": TUMBLING, "kind": "reduce"}, keyed=False),
     "spec.pipeline[2].inputs[0].keyBy", "needs keyBy"),
    (_window_spec({"assigner": TUMBLING, "kind": "reduce"}, stamped=False),
     "spec.pipeline[2].window.assigner.time", "need records with timestamps"),
    (_window_spec({"assigner": {**TUMBLING, "time": "processing"}, "kind": "reduce",
                   "allowedLateness": "1s"}),
     "spec.pipeline[2].window.allowedLateness", "needs event-time windows"),
    (_window_spec({"assigner": TUMBLING, "kind": "process",
                   "windowFunction": "api_fns:Contents"}),
     "spec.pipeline[2].window.windowFunction", "reduce or aggregate only"),
    (_window_spec({"assigner": {"type": "global"}, "kind": "reduce"}),
     "spec.pipeline[2].window.trigger", "never fire"),
    (_window_spec({"assigner": {"type": "session", "time": "event", "gap": "5s"},
                   "kind": "reduce", "trigger": {"type": "count", "count": 3}}),
     "spec.pipeline[2].window.trigger", "cannot merge"),
    (_window_spec({"assigner": {"type": "tumbling", "time": "event"}, "kind": "reduce"}),
     "spec.pipeline[2].window.assigner", "need size"),
    (_window_spec({"assigner": {"type": "tumbling", "time": "event", "size": "1m",
                                "gap": "1s"}, "kind": "reduce"}),
     "spec.pipeline[2].window.assigner", "take no gap"),
    (_window_spec({"assigner": TUMBLING, "kind": "reduce"}, operator_type="map"),
     "spec.pipeline[2].window", "only window, window_all and window_join"),
    ({"pipeline": [{"name": "source", "type": "collection", "args": {"elements": [1]}},
                   {"name": "w", "type": "window_all", "inputs": ["source"],
                    "function": "api_fns:add_pairs", "parallelism": 2,
                    "window": {"assigner": {**TUMBLING, "time": "processing"},
                               "kind": "reduce"}},
                   {"name": "out", "type": "print", "inputs": ["w"]}]},
     "spec.pipeline[1].parallelism", "non-parallel"),
])
def test_window_misuse_names_the_field(spec: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(SpecError) as error:
        compile_job(parse_spec(spec), "bad")
    problems = error.value.problems
    assert any(p.path == path and message in p.message for p in problems), problems


def test_a_window_on_global_windows_with_a_trigger_compiles() -> None:
    spec = parse_spec(_window_spec({"assigner": {"type": "global"}, "kind": "reduce",
                                    "trigger": {"type": "count", "count": 2,
                                                "purging": True}}))
    node = compile_job(spec, "global").stream_graph.node("w")
    assert node.args["window"]["trigger"] == {"type": "purging",
                                              "trigger": {"type": "count", "count": 2}}
    assert node.operator_name == "Window(GlobalWindows(), PurgingTrigger, add_pairs)"


def test_the_api_refuses_what_is_not_a_window_assigner() -> None:
    _, stamped = _stamped()
    with pytest.raises(TypeError, match="WindowAssigner"):
        stamped.key_by(0).window(GlobalWindows)  # the class, not GlobalWindows.create()
