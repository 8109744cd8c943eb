"""How long the kafka source waits on the brokers: the client's own request timeout when the job
sets one, so an unreachable broker fails the job as soon as the client gives up."""

from __future__ import annotations

import pytest

from dataflow_engine.runtime.streamoperators.kafka import request_timeout
from dataflow_engine.spec.catalog import KafkaSourceArgs

pytestmark = pytest.mark.unit


def _args(properties: dict[str, object]) -> KafkaSourceArgs:
    return KafkaSourceArgs.model_validate(
        {"bootstrapServers": "broker:9092", "topics": ["t"], "properties": properties})


@pytest.mark.parametrize(("properties", "seconds"), [
    ({}, 15.0),
    ({"socket.timeout.ms": "2000"}, 2.0),
    ({"socket.timeout.ms": "60000", "security.protocol": "SSL"}, 60.0),
    # Not a number: librdkafka refuses it, naming the property, when the client is made.
    ({"socket.timeout.ms": "soon"}, 15.0),
    ({"socket.timeout.ms": {"secretKeyRef": {"name": "kafka", "key": "timeout"}}}, 15.0),
])
def test_the_request_timeout_is_the_clients_socket_timeout_when_set(
        properties: dict[str, object], seconds: float) -> None:
    assert request_timeout(_args(properties)) == seconds
