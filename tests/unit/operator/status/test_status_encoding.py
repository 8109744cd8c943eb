"""The compact per-subtask status stays small at 10 JobVertices x parallelism 1,000."""

from __future__ import annotations

import json
import random

import pytest

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_operator.status.job_status import vertex_status
from dataflow_operator.status.model import DataflowJobStatus
from dataflow_operator.status.subtask_encoding import (
    decode_runs,
    decode_states,
    encode_runs,
    encode_states,
)

pytestmark = pytest.mark.unit


def test_runs_round_trip() -> None:
    values = [0, 0, 0, 5, 0, 7, 7]
    assert encode_runs(values) == "0*3,5,0,7*2"
    assert decode_runs(encode_runs(values)) == values
    assert encode_runs([36, 35], base36=True) == "10,z"
    assert decode_runs("10,z", base36=True) == [36, 35]
    assert decode_runs("") == []


def test_states_round_trip() -> None:
    states = list(ExecutionState)
    assert decode_states(encode_states(states)) == states
    assert len(encode_states(states)) == len(states)


def test_worst_case_status_fits_etcd() -> None:
    rng = random.Random(7)
    states = list(ExecutionState)
    vertices = []
    for v in range(10):
        n = 1000
        vertices.append(vertex_status(
            f"{v:032x}", "Keyed Aggregation -> Filter -> Sink: Print to Std. Out " * 2,
            [rng.choice(states) for _ in range(n)], [rng.randrange(5) for _ in range(n)],
            [rng.randrange(10**12) for _ in range(n)], [rng.randrange(10**12) for _ in range(n)]))
    status = DataflowJobStatus(job_status=JobStatus.RUNNING, vertices=vertices)
    size = len(json.dumps(status.model_dump(mode="json", by_alias=True)))
    assert size < 256 * 1024, size
    first = vertices[0]
    assert sum(first.states.values()) == 1000
    assert len(decode_runs(first.subtask_records_in, base36=True)) == 1000
