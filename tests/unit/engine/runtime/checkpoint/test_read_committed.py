"""An exactly-once sink reads its group's committed offsets through a coordinator that may be
loading or moving on a broker just started: such answers are asked again, others fail."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from dataflow_engine.runtime.checkpoint import kafka_commit

pytestmark = pytest.mark.unit


class _Consumer:
    def __init__(self, *answers: Any) -> None:
        self.answers, self.asked = list(answers), 0

    def committed(self, partitions: list[Any], timeout: float) -> Any:
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, KafkaError):
            raise KafkaException(answer)
        return answer


def test_a_moving_coordinator_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_commit, "_RETRY_PAUSE", 0.0)
    consumer = _Consumer(KafkaError(KafkaError.NOT_COORDINATOR),
                         KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS), ["offsets"])
    assert kafka_commit.read_committed(consumer, []) == ["offsets"]
    assert consumer.asked == 3


def test_another_error_or_the_deadline_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_commit, "_RETRY_PAUSE", 0.0)
    denied = _Consumer(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED), ["never"])
    with pytest.raises(KafkaException):
        kafka_commit.read_committed(denied, [])
    assert denied.asked == 1
    moving = _Consumer(*[KafkaError(KafkaError.NOT_COORDINATOR)] * 3)
    with pytest.raises(KafkaException):
        kafka_commit.read_committed(moving, [], timeout=0.0)
    assert moving.asked == 1
