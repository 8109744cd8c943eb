"""Which operator a fused run's failure is: the step whose function raised (found from the
traceback's line, the run having one handler), chained to what it raised; what fails after
the run (its output, an operator downstream) goes on as it is."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_engine.runtime.tasks.fusion import FusedStep, fuse
from dataflow_engine.runtime.tasks.outputs import Counter
from dataflow_engine.runtime.time.elements import ElementTimestamp

pytestmark = pytest.mark.unit


class StepFailure(Exception):
    def __init__(self, step: str, error: BaseException) -> None:
        super().__init__(f"{step} failed: {error}")
        self.step = step


def _failing_as(step: str) -> Any:
    return lambda error: StepFailure(step, error)


def _reciprocal(value: int) -> float:
    return 1 / value


def _run(collect: Any, cell: ElementTimestamp | None = None) -> Any:
    steps = [FusedStep("map", lambda value: value - 1, _failing_as("minus"), True, Counter()),
             FusedStep("filter", lambda value: value != 99, _failing_as("not 99"), False,
                       Counter()),
             FusedStep("map", _reciprocal, _failing_as("reciprocal"), True, Counter())]
    if cell is not None:
        steps.insert(1, FusedStep("stamp", lambda value, ts: 7, _failing_as("stamp"), False,
                                  Counter(), cell))
    return fuse(steps, (collect, False))


@pytest.mark.parametrize("in_a_loop", [False, True], ids=["one", "loop"])
def test_the_step_whose_function_raised_fails_chained_to_its_error(in_a_loop: bool) -> None:
    out: list[Any] = []
    run = _run(out.append)
    with pytest.raises(StepFailure) as failed:
        if in_a_loop:
            run.process_all([3, 100, 1, 5])  # 1 - 1 = 0: the reciprocal's division by zero
        else:
            run.process_element(1)
    assert failed.value.step == "reciprocal"
    assert isinstance(failed.value.__cause__, ZeroDivisionError)
    assert out == ([0.5] if in_a_loop else [])  # what came before the failure went on
    with pytest.raises(StepFailure) as first:
        run.process_all(["a"]) if in_a_loop else run.process_element("a")
    assert first.value.step == "minus" and isinstance(first.value.__cause__, TypeError)


@pytest.mark.parametrize("in_a_loop", [False, True], ids=["one", "loop"])
def test_a_failure_after_the_run_is_not_one_of_its_steps(in_a_loop: bool) -> None:
    def downstream(value: Any) -> None:
        raise KeyError("downstream")

    run = _run(downstream)
    with pytest.raises(KeyError, match="downstream"):
        run.process_all([3]) if in_a_loop else run.process_element(3)


@pytest.mark.parametrize("in_a_loop", [False, True], ids=["one", "loop"])
def test_a_step_failing_after_a_stamp_restores_the_timestamp(in_a_loop: bool) -> None:
    cell = ElementTimestamp()
    cell.value = 42
    run = _run(lambda value: None, cell)
    with pytest.raises(StepFailure, match="reciprocal"):
        run.process_all([1]) if in_a_loop else run.process_element(1)
    assert cell.value == 42
