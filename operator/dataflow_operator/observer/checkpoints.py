"""A continuous job's checkpoints as its driver reports them: the status's ``checkpoints``
section, the Checkpointing condition, and an Event per failure or recovery."""

from __future__ import annotations

from dataflow_engine.rest import DriverStatusDocument
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, WARNING, Event
from dataflow_operator.status.model import (
    KAFKA_PARTITIONS_SHOWN,
    CheckpointingStatus,
    CompletedCheckpointStatus,
    Condition,
    KafkaPartitionStatus,
)


def checkpoints_from_runner(runner: DriverStatusDocument | None) -> CheckpointingStatus | None:
    """The runner's checkpoint statistics (a continuous job's), with times in RFC 3339 and
    the most lagging Kafka partitions first."""
    reported = runner.checkpoints if runner is not None else None
    if reported is None:
        return None
    last = reported.last_completed
    partitions = sorted(reported.kafka_partitions,
                        key=lambda p: (-p.lag, p.source, p.topic, p.partition))
    return CheckpointingStatus(
        epochs=reported.epochs, completed=reported.completed, failed=reported.failed,
        consecutive_failures=reported.consecutive_failures,
        last_failure=(cond.bounded(reported.last_failure)
                      if reported.last_failure is not None else None),
        last_completed=CompletedCheckpointStatus(
            id=last.id, time=cond.from_millis(last.time), duration_ms=last.duration_ms,
            state_size=last.state_size, path=last.path) if last is not None else None,
        restored_from=reported.restored_from,
        kafka_lag=sum(p.lag for p in partitions) if partitions else None,
        kafka_partitions=[KafkaPartitionStatus(source=p.source, topic=p.topic,
                                               partition=p.partition, offset=p.offset, lag=p.lag)
                          for p in partitions[:KAFKA_PARTITIONS_SHOWN]])


def checkpoint_outcomes(before: CheckpointingStatus | None, after: CheckpointingStatus,
                        conditions: list[Condition], spec: DataflowJobSpec,
                        generation: int) -> tuple[list[Condition], list[Event]]:
    """Checkpoint failures as Events, and the Checkpointing condition: False while checkpoints
    fail one after another, True again once one completes."""
    events: list[Event] = []
    # A new driver counts from zero: nothing before it is compared.
    earlier = before.failed if before is not None and before.failed <= after.failed else 0
    if after.failed > earlier:
        events.append(Event(WARNING, "CheckpointFailed",
                            f"{after.failed - earlier} checkpoint(s) failed: "
                            f"{after.last_failure or 'no reason given'}"))
    shown = next((c for c in conditions if c.type == cond.CHECKPOINTING), None)
    if after.consecutive_failures:
        tolerable = spec.checkpointing.tolerable_failed_checkpoints if spec.checkpointing else 0
        conditions = cond.set_condition(
            conditions, cond.CHECKPOINTING, False, "CheckpointsFailing",
            f"{after.consecutive_failures} checkpoint(s) failed in a row, more than "
            f"{tolerable} (tolerableFailedCheckpoints) fail the job: {after.last_failure}",
            generation)
    elif after.last_completed is not None:
        if shown is not None and shown.status == "False":
            events.append(Event(NORMAL, "CheckpointsRecovered",
                                f"checkpoint {after.last_completed.id} completed"))
        conditions = cond.set_condition(conditions, cond.CHECKPOINTING, True,
                                        "CheckpointCompleted", "checkpoints complete",
                                        generation)
    return conditions, events
