"""Sinks of a pipelined task roll over at each checkpoint barrier: what they wrote before it is
the checkpoint's committable, what follows belongs to the next checkpoint (Flink's sinks roll
part files and transactions on checkpoints)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.runtime.checkpoint.committer import FileCommittable
from dataflow_engine.runtime.checkpoint.kafka_commit import KafkaCommittable
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.streamoperators.kafka_sink import KafkaSinkOperator
from dataflow_engine.runtime.streamoperators.stream_operators import FileSinkOperator
from dataflow_engine.runtime.tasks.descriptors import OperatorConfig
from dataflow_engine.spec.model import OperatorType

pytestmark = pytest.mark.unit


def _config(operator_type: OperatorType, args: dict[str, Any]) -> OperatorConfig:
    return OperatorConfig(node_id=1, name="out", operator_type=operator_type,
                          display_name="Sink", function=None, args=args, parallelism=1,
                          max_parallelism=128, chained_outputs=(), writer_outputs=())


def _task(epoch: int) -> TaskInfo:
    return TaskInfo("job", "task", 0, 1, 128, 0, epoch=epoch)


def test_a_file_sink_closes_a_part_per_checkpoint_and_drops_an_empty_one(tmp_path: Path) -> None:
    sink = FileSinkOperator(_config(OperatorType.FILE, {"path": str(tmp_path),
                                                        "format": "json"}), _task(3))
    sink.open()
    for record in ([1, "a"], [2, "b"]):
        sink.process_element(record)
    sink.prepare_snapshot_pre_barrier()
    (first,) = sink.committables()
    sink.roll_over(4)
    sink.process_element([3, "c"])
    sink.prepare_snapshot_pre_barrier()
    (second,) = sink.committables()
    assert isinstance(first, FileCommittable) and isinstance(second, FileCommittable)
    assert "-00000003-" in first.final and "-00000004-" in second.final
    assert Path(first.pending).read_text() == '[1, "a"]\n[2, "b"]\n'
    assert Path(second.pending).read_text() == '[3, "c"]\n'
    sink.roll_over(5)
    sink.prepare_snapshot_pre_barrier()
    assert sink.committables() == ()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        Path(c.pending).name for c in (first, second))  # the empty part is gone
    sink.close()


def test_an_exactly_once_kafka_sink_hands_over_each_checkpoints_records_once() -> None:
    sink = KafkaSinkOperator(_config(OperatorType.KAFKA_SINK, {
        "bootstrapServers": "localhost:9092", "topic": "t", "deliveryGuarantee": "exactly-once",
        "transactionalIdPrefix": "tx"}), _task(7))
    sink.open()
    for value in ("a", "b"):
        sink.process_element(value)
    sink.prepare_snapshot_pre_barrier()
    (first,) = sink.committables()
    sink.roll_over(8)
    assert sink.committables() == ()
    sink.process_element("c")
    sink.prepare_snapshot_pre_barrier()
    (second,) = sink.committables()
    assert isinstance(first, KafkaCommittable) and isinstance(second, KafkaCommittable)
    assert (first.epoch, [r[1] for r in first.records]) == (7, [b"a", b"b"])
    assert (second.epoch, [r[1] for r in second.records]) == (8, [b"c"])
