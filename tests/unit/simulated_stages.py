"""A vertex of the simulated linear pipelines the autoscaler's unit tests run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Stage:
    """A vertex of a simulated linear pipeline: what a subtask processes per busy second, and
    the records it emits per record in."""

    vertex_id: str
    true_rate: float
    selectivity: float
    parallelism: int


def epoch_cost(stages: list[Stage], rates: list[float] | None = None) -> float:
    """The epoch time one source record costs: a subtask of each stage processes its share
    of what the record becomes, and the stages of an epoch run one after another."""
    gain, cost = 1.0, 0.0
    for s, rate in zip(stages, rates or [s.true_rate for s in stages], strict=True):
        cost += gain / (rate * s.parallelism)
        gain *= s.selectivity
    return cost


def epoch_flows(available: list[float], costs: list[float]) -> list[float]:
    """The source records a second of epochs processes of what waits for each pipeline of
    one job: all of it, unless that takes more than the second; then each pipeline's records
    in proportion (an epoch takes what waits, and lasts as long as its stages)."""
    busy = sum(a * c for a, c in zip(available, costs, strict=True))
    return [a / max(1.0, busy) for a in available]
