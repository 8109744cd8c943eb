"""A continuous job's recent rates per subtask, from the totals sampled as epochs end."""

from __future__ import annotations

import pytest

from dataflow_engine.runtime.jobmaster.rates import RateWindow
from dataflow_engine.runtime.taskmanager.stream_task import SubtaskMetrics

pytestmark = pytest.mark.unit
KEY = ("v", 0)


def _totals(records_in: int, records_out: int, busy_ms: int) -> dict[tuple[str, int],
                                                                     SubtaskMetrics]:
    return {KEY: SubtaskMetrics("v", 0, 0, records_in, records_out, (), busy_ms)}


def test_rates_are_the_totals_difference_over_the_time_between_the_samples() -> None:
    window = RateWindow(span=10)
    assert window.rates() == {}  # one epoch says nothing of a rate
    window.add(100.0, _totals(0, 0, 0))
    assert window.rates() == {}
    window.add(104.0, _totals(400, 200, 1000))
    rates = window.rates()[KEY]
    assert (rates.records_in_per_second, rates.records_out_per_second) == (100, 50)
    assert rates.busy_ratio == pytest.approx(0.25)


def test_the_window_forgets_epochs_older_than_its_span_but_keeps_one_that_old() -> None:
    window = RateWindow(span=10)
    window.add(0.0, _totals(0, 0, 0))  # a burst long ago
    window.add(1.0, _totals(10_000, 0, 1000))
    for second in range(2, 31):  # then 100 records/s, half busy
        window.add(float(second), _totals(10_000 + 100 * (second - 1), 0, 1000 + 500 * (
            second - 1)))
    rates = window.rates()[KEY]
    assert rates.records_in_per_second == pytest.approx(100)
    assert rates.busy_ratio == pytest.approx(0.5)


def test_a_busy_ratio_stays_within_zero_and_one() -> None:
    window = RateWindow()
    window.add(0.0, _totals(0, 0, 0))
    window.add(1.0, _totals(5, 5, 3000))  # tasks measured longer than the wall time between
    assert window.rates()[KEY].busy_ratio == 1.0
