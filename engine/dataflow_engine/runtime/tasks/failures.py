"""Failures of user code, carried from a Spark executor to the driver with their origin.

Spark reports a failed Python task as text (the worker's traceback inside a Java exception), so
the origin travels as one marked JSON line inside the exception message and is parsed back out.
"""

from __future__ import annotations

import json
import re
import traceback
from dataclasses import asdict, dataclass
from typing import Any

_MARK = "@@dataflow-failure@@"
_PATTERN = re.compile(re.escape(_MARK) + r"(\{.*?\})" + re.escape(_MARK))


@dataclass(frozen=True)
class TaskFailure:
    """Which operator of which subtask failed, and with what exception."""

    operator: str
    task_name: str
    subtask_index: int
    parallelism: int
    attempt_number: int
    exception_type: str
    message: str
    traceback: str

    def describe(self) -> str:
        return (f"operator {self.operator!r} failed in subtask {self.subtask_index} "
                f"({self.task_name} ({self.subtask_index + 1}/{self.parallelism}), "
                f"attempt {self.attempt_number}): {self.exception_type}: {self.message}")


class OperatorFailure(Exception):
    """Raised on an executor when a user function throws; fails the Spark task."""

    def __init__(self, failure: TaskFailure) -> None:
        self.failure = failure
        super().__init__(failure.describe())

    def __str__(self) -> str:
        return f"{self.failure.describe()}\n{_MARK}{json.dumps(asdict(self.failure))}{_MARK}"


def operator_failure(error: BaseException, *, operator: str, task_name: str, subtask_index: int,
                     parallelism: int, attempt_number: int) -> OperatorFailure:
    return OperatorFailure(TaskFailure(
        operator=operator,
        task_name=task_name,
        subtask_index=subtask_index,
        parallelism=parallelism,
        attempt_number=attempt_number,
        exception_type=type(error).__qualname__,
        message=str(error),
        traceback="".join(traceback.format_exception(error)),
    ))


def find_task_failure(text: str) -> TaskFailure | None:
    """The last failure marked in ``text`` (Spark's report of the most recent attempt)."""
    matches = _PATTERN.findall(text)
    if not matches:
        return None
    data: dict[str, Any] = json.loads(matches[-1])
    return TaskFailure(**data)
