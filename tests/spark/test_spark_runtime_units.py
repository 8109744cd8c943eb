"""The runtime's pure-Python parts: key groups, splits, channel selectors, copying."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow_engine.runtime.network.partitioners import (
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
)
from dataflow_engine.runtime.state.key_groups import (
    assign_key_to_parallel_operator,
    assign_to_key_group,
    compute_operator_index_for_key_group,
    java_hash_code,
    murmur_hash,
)
from dataflow_engine.runtime.streamoperators.sources import (
    collection_splits,
    read_text_segments,
    sequence_splits,
    text_splits,
)
from dataflow_engine.runtime.tasks.failures import OperatorFailure, TaskFailure, find_task_failure
from dataflow_engine.runtime.tasks.outputs import copy_record

pytestmark = pytest.mark.spark


def test_key_hashes_match_java_and_flink() -> None:
    # Values computed with Java 17: String/Long/Double.hashCode and Flink's MathUtils.murmurHash.
    assert java_hash_code("hello") == 99162322
    assert java_hash_code("héllo𝄞") == 291563960
    assert java_hash_code(1 << 40) == 256
    assert java_hash_code(1.5) == 1073217536
    assert murmur_hash(0) == 593689054
    assert murmur_hash(99162322) == 1715862179
    assert murmur_hash(-7) == 206585249
    assert assign_to_key_group("hello", 128) == 35


def test_equal_python_keys_share_a_key_group() -> None:
    assert java_hash_code(1) == java_hash_code(1.0) == java_hash_code(True)
    assert java_hash_code(("a", 1)) == java_hash_code(["a", 1])
    with pytest.raises(TypeError, match="no stable hash"):
        java_hash_code(object())


@given(st.integers(1, 1 << 15), st.data())
def test_operator_index_is_in_range(max_parallelism: int, data: st.DataObject) -> None:
    parallelism = data.draw(st.integers(1, max_parallelism))
    key = data.draw(st.one_of(st.text(), st.integers(), st.tuples(st.text(), st.integers())))
    group = assign_to_key_group(key, max_parallelism)
    assert 0 <= group < max_parallelism
    index = assign_key_to_parallel_operator(key, max_parallelism, parallelism)
    assert index == compute_operator_index_for_key_group(max_parallelism, parallelism, group)
    assert 0 <= index < parallelism


def test_round_robin_partitioners() -> None:
    rescale = RescalePartitioner()
    rescale.setup(3)
    select = rescale.channel_selector()
    assert [select(None) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    rebalance = RebalancePartitioner()
    rebalance.setup(4)
    start = rebalance.next_channel_to_send_to
    select = rebalance.channel_selector()
    assert [select(None) for _ in range(5)] == [(start + i) % 4 for i in range(1, 6)]
    shuffle = ShufflePartitioner()
    shuffle.setup(5)
    assert {shuffle.channel_selector()(None) for _ in range(500)} == set(range(5))


def test_copy_record_copies_only_what_can_change() -> None:
    atom_tuple = ("a", 1, 2.5, None)
    assert copy_record(atom_tuple) is atom_tuple
    nested = ("a", [1, 2])
    copied = copy_record(nested)
    assert copied == nested and copied[1] is not nested[1]
    record = {"k": [1]}
    assert copy_record(record) == record and copy_record(record)["k"] is not record["k"]


def test_collection_and_sequence_splits_are_contiguous() -> None:
    assert collection_splits(list("abcde"), 2) == (("a", "b"), ("c", "d", "e"))
    assert sequence_splits(1, 10, 3) == ((1, 4), (4, 7), (7, 11))
    assert collection_splits([], 3) == ((), (), ())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.text(alphabet="ab \r", max_size=12), max_size=15), min_size=1,
                max_size=3),
       st.lists(st.booleans(), min_size=3, max_size=3), st.integers(1, 9))
def test_text_splits_read_every_line_once(tmp_path_factory: pytest.TempPathFactory,
                                          files: list[list[str]], final_newline: list[bool],
                                          parallelism: int) -> None:
    directory = tmp_path_factory.mktemp("text")
    expected: list[str] = []
    for index, lines in enumerate(files):
        lines = [line.replace("\r", "") for line in lines]
        text = "\n".join(lines) + ("\n" if final_newline[index] and lines else "")
        (directory / f"f{index}.txt").write_text(text, newline="")
        if text:
            expected += text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    splits = text_splits(str(directory), parallelism)
    assert len(splits) == parallelism
    assert [line for split in splits for line in read_text_segments(split)] == expected


def test_text_source_paths(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\r\ny\n")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".hidden").write_text("no\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("z")
    lines = [line for s in text_splits(str(tmp_path), 2) for line in read_text_segments(s)]
    assert lines == ["x", "y", "z"]
    glob_lines = [line for s in text_splits(f"file://{tmp_path}/*.txt", 1)
                  for line in read_text_segments(s)]
    assert glob_lines == ["x", "y"]
    with pytest.raises(FileNotFoundError):
        text_splits(str(tmp_path / "missing"), 1)


def test_task_failure_survives_the_trip_through_spark_error_text() -> None:
    failure = TaskFailure("op", "Map", 1, 2, 0, "ValueError", "bad 'x'\nline2", "tb")
    text = f"py4j ... Traceback ...\n{OperatorFailure(failure)}\n\tat org.apache..."
    assert find_task_failure(text) == failure
    assert find_task_failure("no marker") is None
