"""Which subtask a key reaches: Java's keyBy hashes the key itself, PyFlink's key_by a
one-field Row of the pickled key (or of the key as its key_type). Checked against what PyFlink
2.3 printed for 120 keys at parallelism 2 and 4 (tests/spark/pyflink_probes/key_hashing.py)."""

from __future__ import annotations

import json
import re
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.runtime.network.partitioners import KeyGroupStreamPartitioner
from dataflow_engine.runtime.state.key_groups import (
    assign_key_to_parallel_operator,
    batch_key_order,
    java_hash_code,
    key_hash,
)
from dataflow_engine.types import TypeInformation, Types

pytestmark = pytest.mark.unit

RECORDINGS = Path(__file__).parents[5] / "tests/spark/pyflink_recordings/2.3.0/probes"
LINE = re.compile(r"(\d+)> \((.*),(-?\d+)\)$")


def _recorded(parallelism: int) -> list[tuple[TypeInformation, Any, int]]:
    """(key type, key, subtask index) of every line the probe printed."""
    stdout = json.loads((RECORDINGS / f"key_hashing-p{parallelism}.json").read_text())["stdout"]
    section, found = "", []
    for line in stdout:
        if line.startswith("=="):
            section = line
            continue
        match = LINE.match(line)
        if match is None:
            continue
        ints = "int keys" in section
        key = int(match.group(2)) if ints else match.group(2)
        key_type = (Types.PICKLED_BYTE_ARRAY() if "no key_type" in section
                    else Types.INT() if ints else Types.STRING())
        found.append((key_type, key, int(match.group(1)) - 1))
    return found


@pytest.mark.parametrize("parallelism", [2, 4])
def test_keys_reach_the_subtask_they_reach_in_pyflink(parallelism: int) -> None:
    recorded = _recorded(parallelism)
    assert len(recorded) == 120
    assert {type(key_type) for key_type, _, _ in recorded} == {
        type(Types.PICKLED_BYTE_ARRAY()), type(Types.INT())}  # basic types share a class
    wrong = [(key_type, key, subtask) for key_type, key, subtask in recorded
             if assign_key_to_parallel_operator(key, 128, parallelism,
                                                key_hash(key_type)) != subtask]
    assert wrong == []


def test_without_a_key_type_keys_hash_as_a_java_keyby() -> None:
    assert key_hash(None) is java_hash_code
    assert java_hash_code("hello") == 99162322  # String.hashCode
    assert key_hash(Types.STRING())("hello") == 99162322 + 62  # the one-field Row's


def test_typed_keys_hash_as_their_java_values() -> None:
    assert key_hash(Types.BOOLEAN())(True) == 1231 + 62  # Boolean.hashCode
    assert key_hash(Types.FLOAT())(1.5) == 0x3FC00000 + 62  # Float.floatToIntBits
    assert key_hash(Types.DOUBLE())(1.5) == 0x3FF80000 + 62  # Double.hashCode


def test_a_batch_input_of_pickled_keys_is_in_the_order_of_their_pickles() -> None:
    order = batch_key_order(Types.PICKLED_BYTE_ARRAY())
    assert order is not None
    # shorter pickles first (their length leads the serialized row), then bytes: what
    # PyFlink's word_count prints in BATCH mode
    assert sorted(["the", "a", "Be", "be", "And", "is"], key=order) == [
        "a", "Be", "be", "is", "And", "the"]
    assert batch_key_order(None) is None and batch_key_order(Types.STRING()) is None


def test_a_partitioners_known_channels_are_those_its_selector_found() -> None:
    partitioner = KeyGroupStreamPartitioner(itemgetter(0), 128)
    partitioner.setup(4)
    known, select = partitioner.key_channels()
    assert known == {}
    keys = ["a", "b", 7, (1, "x")]
    channels = [select(key) for key in keys]
    assert channels == [assign_key_to_parallel_operator(key, 128, 4) for key in keys]
    assert known == dict(zip(keys, channels, strict=True))  # what a hot loop looks up first
    assert {select(key) for key in keys} <= set(range(4)) and len(known) == 4
