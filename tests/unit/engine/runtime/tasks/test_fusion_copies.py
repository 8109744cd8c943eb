"""Copies inside a fused run without object reuse: each step gets its own copy of a value that
can change, and a value that cannot is passed as it is."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_engine.runtime.tasks import fusion
from dataflow_engine.runtime.tasks.fusion import FusedStep, fuse
from dataflow_engine.runtime.tasks.outputs import Counter, copy_record

pytestmark = pytest.mark.unit


def _failure(error: BaseException) -> BaseException:
    return error


def _run(value: Any, monkeypatch: pytest.MonkeyPatch, in_a_loop: bool
         ) -> tuple[list[Any], list[Any], int]:
    """What a filter, a map and the collector were given, and how many copies were asked
    (``in_a_loop``: the run's loop over records, not its function of one)."""
    seen: list[Any] = []
    calls = []

    def counted(record: Any) -> Any:
        calls.append(record)
        return copy_record(record)

    monkeypatch.setattr(fusion, "copy_record", counted)

    def keep(record: Any) -> bool:
        seen.append(record)
        return True

    def same(record: Any) -> Any:
        seen.append(record)
        return record

    steps = [FusedStep("filter", keep, _failure, True, Counter()),
             FusedStep("filter", keep, _failure, True, Counter()),
             FusedStep("map", same, _failure, True, Counter()),
             FusedStep("map", same, _failure, True, Counter())]
    collected: list[Any] = []
    run = fuse(steps, (collected.append, False))
    if in_a_loop:
        run.process_all([value])
    else:
        run.process_element(value)
    return seen, collected, len(calls)


LOOPED = pytest.mark.parametrize("in_a_loop", [False, True], ids=["one", "loop"])


@LOOPED
@pytest.mark.parametrize("original", [[1, ["nested"]], (1, ["nested"])], ids=["list", "tuple"])
def test_every_step_gets_its_own_copy_of_a_value_that_can_change(
        monkeypatch: pytest.MonkeyPatch, in_a_loop: bool, original: Any) -> None:
    seen, collected, copies = _run(original, monkeypatch, in_a_loop)
    objects = [id(value) for value in [original, *seen]]
    assert len(set(objects)) == len(objects) == 5  # the original and four copies
    assert all(value == original for value in seen) and copies == 4
    assert collected[0] is seen[-1]


@LOOPED
def test_a_value_that_cannot_change_is_passed_as_it_is(
        monkeypatch: pytest.MonkeyPatch, in_a_loop: bool) -> None:
    original = (1, "a", 2.5, None)
    seen, collected, copies = _run(original, monkeypatch, in_a_loop)
    assert all(value is original for value in [*seen, *collected])
    assert copies == 0  # a tuple of atoms is looked at in the run itself, not copied
    seen, collected, copies = _run([1, 2], monkeypatch, in_a_loop)
    assert copies == 4 and all(value == [1, 2] for value in seen)


def test_a_loop_over_records_of_several_classes_copies_each_that_can_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A map step remembers the last immutable class it saw: a record of another class after
    it (a list after an int, a tuple holding a list after a str) is still copied."""
    copied: list[Any] = []

    def counted(record: Any) -> Any:
        copied.append(record)
        return copy_record(record)

    monkeypatch.setattr(fusion, "copy_record", counted)
    given: list[Any] = []

    def same(record: Any) -> Any:
        given.append(record)
        return record

    records: list[Any] = [1, [1], [2], "a", (3, ["b"]), (4, ["c"]), "c", [4], 5.0]
    steps = [FusedStep("map", same, _failure, True, Counter()) for _ in range(3)]
    collected: list[Any] = []
    fuse(steps, (collected.append, False)).process_all(records)
    mutable = [record for record in records if isinstance(record, list | tuple)]
    assert copied[::3] == mutable and len(copied) == 3 * len(mutable)  # once per step
    assert collected == records
    for record, out in zip(records, collected, strict=True):
        assert (out is record) == (record not in mutable)
    assert all(value is not records[1] for value in given[3:6])  # each step's own


@LOOPED
@pytest.mark.parametrize("last", ["map", "filter"])
def test_each_writer_that_keeps_records_gets_its_own_copy_of_a_record_that_can_change(
        in_a_loop: bool, last: str) -> None:
    """The outputs asking for a copy (RecordWriters keeping records for their batch, which
    may hand them to a reduce function) get one each; the others get the run's own value,
    and a value that cannot change is passed to all as it is."""
    def same(record: Any) -> Any:
        return record

    def keep(record: Any) -> bool:
        return True

    function = keep if last == "filter" else same
    for original, copies in (([1, [2]], True), ((1, "a"), False), ((1, ["a"]), True)):
        got: dict[str, list[Any]] = {"writer": [], "other writer": [], "operator": []}
        steps = [FusedStep("map", same, _failure, True, Counter()),
                 FusedStep(last, function, _failure, True, Counter())]  # type: ignore[arg-type]
        run = fuse(steps, (got["writer"].append, True), (got["operator"].append, False),
                   (got["other writer"].append, True))
        if in_a_loop:
            run.process_all([original])
        else:
            run.process_element(original)
        (kept,), (other,), (value,) = got["writer"], got["other writer"], got["operator"]
        assert kept == other == value == original
        assert len({id(kept), id(other), id(value)}) == (3 if copies else 1)
