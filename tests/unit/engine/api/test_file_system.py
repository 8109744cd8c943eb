"""PyFlink's file_system builders make the spec's text source and file sink."""

from __future__ import annotations

import time

import pytest

from dataflow_engine.api.common import Duration, Encoder
from dataflow_engine.api.datastream import StreamExecutionEnvironment
from dataflow_engine.api.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from dataflow_engine.runtime.streamoperators.stream_operators import bucket_name

pytestmark = pytest.mark.unit


def _args(build: object) -> list[dict[str, object]]:
    env = StreamExecutionEnvironment.get_execution_environment()
    build(env)  # type: ignore[operator]
    return [op.args for op in env.build_spec().pipeline]


def test_a_file_source_from_its_builder() -> None:
    static = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/in/a",
                                                 "/in/b").process_static_file_set().build()
    watched = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/in") \
        .monitor_continuously(Duration.of_seconds(5)).build()
    assert static.spec_args() == {"path": ["/in/a", "/in/b"]}
    assert watched.spec_args() == {"path": "/in", "monitorInterval": "5000ms"}
    with pytest.raises(ValueError, match="reads UTF-8 text, not 'latin-1'"):
        StreamFormat.text_line_format("latin-1")


def test_a_file_sink_from_its_builder_names_parts_and_buckets_as_configured() -> None:
    config = OutputFileConfig.builder().with_part_prefix("prefix").with_part_suffix(".ext") \
        .build()
    sink = FileSink.for_row_format("/out", Encoder.simple_string_encoder()) \
        .with_output_file_config(config) \
        .with_rolling_policy(RollingPolicy.default_rolling_policy()).build()
    assert sink.args() == {"path": "/out", "partPrefix": "prefix", "partSuffix": ".ext",
                           "bucketFormat": "yyyy-MM-dd--HH"}  # Flink's default buckets
    flat = FileSink.for_row_format("/out", Encoder.simple_string_encoder()) \
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build()
    assert flat.args() == {"path": "/out"}
    args = _args(lambda env: env.from_collection(["a"]).sink_to(sink))
    assert args[1] == sink.args()


def test_bad_settings_are_refused_at_the_call() -> None:
    with pytest.raises(ValueError, match="bucket format 'yyyy/MM'"):
        BucketAssigner.date_time_bucket_assigner("yyyy/MM")
    with pytest.raises(NotImplementedError, match="time zone"):
        BucketAssigner.date_time_bucket_assigner(timezone_id="Europe/Berlin")
    with pytest.raises(ValueError, match="partPrefix"):
        FileSink("/out", part_prefix="a/b")
    with pytest.raises(NotImplementedError, match="FileCompactStrategy"):
        FileSink.for_row_format("/out", Encoder.simple_string_encoder()).enable_compact(
            None, None)
    with pytest.raises(ValueError, match="writes UTF-8"):
        Encoder.simple_string_encoder("UTF-16")


def test_a_bucket_is_named_by_the_java_pattern() -> None:
    moment = time.struct_time((2026, 11, 26, 9, 5, 7, 3, 330, 0))
    assert bucket_name("yyyy-MM-dd--HH", moment) == "2026-11-26--09"
    assert bucket_name("yy.MM.dd 'at' HH_mm_ss", moment) == "26.11.26 at 09_05_07"
