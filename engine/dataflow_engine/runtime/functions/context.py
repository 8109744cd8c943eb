"""What user functions see of the task running them: Flink's RuntimeContext and keyed state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RuntimeContext:
    """Handed to a rich function's ``open(ctx)``; attribute names follow Flink's getters."""

    job_name: str
    #: The JobVertex (chain) name, e.g. ``Flat Map -> Filter``, as Flink's ``getTaskName``.
    task_name: str
    operator_name: str
    index_of_this_subtask: int
    number_of_parallel_subtasks: int
    max_number_of_parallel_subtasks: int
    #: The Spark task attempt running this subtask (0 for the first).
    attempt_number: int

    @property
    def task_name_with_subtasks(self) -> str:
        """``Flat Map (1/2)#0``, as Flink prints it."""
        return (f"{self.task_name} ({self.index_of_this_subtask + 1}/"
                f"{self.number_of_parallel_subtasks})#{self.attempt_number}")


class ValueState:
    """Keyed value state: reads and writes the value of the key being processed."""

    __slots__ = ("_context", "_default", "_values")

    def __init__(self, context: KeyedProcessContext, default: Any) -> None:
        self._context = context
        self._default = default
        self._values: dict[Any, Any] = {}

    def value(self) -> Any:
        return self._values.get(self._context.current_key, self._default)

    def update(self, value: Any) -> None:
        self._values[self._context.current_key] = value

    def clear(self) -> None:
        self._values.pop(self._context.current_key, None)


class KeyedProcessContext:
    """The ``ctx`` of a ``process`` function, scoped to the key of the record being processed.

    ``get_current_key()`` is the record's key; ``get_state(name)`` returns a :class:`ValueState`
    whose ``value()`` / ``update(v)`` / ``clear()`` act on that key only, like Flink's
    ``ValueState`` in a ``KeyedProcessFunction``. ``runtime_context`` is the task's
    :class:`RuntimeContext`.
    """

    __slots__ = ("_states", "current_key", "runtime_context")

    def __init__(self, runtime_context: RuntimeContext) -> None:
        self.runtime_context = runtime_context
        self.current_key: Any = None
        self._states: dict[str, ValueState] = {}

    def get_current_key(self) -> Any:
        return self.current_key

    def get_state(self, name: str, default: Any = None) -> ValueState:
        state = self._states.get(name)
        if state is None:
            state = self._states[name] = ValueState(self, default)
        return state


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """Facts about the running subtask that every operator of its chain shares."""

    job_name: str
    task_name: str
    subtask_index: int
    parallelism: int
    max_parallelism: int
    attempt_number: int
    #: Directory print sinks write to in local mode (the driver relays it); None: stdout.
    print_spool: str | None = None

    def runtime_context(self, operator_name: str) -> RuntimeContext:
        return RuntimeContext(
            job_name=self.job_name,
            task_name=self.task_name,
            operator_name=operator_name,
            index_of_this_subtask=self.subtask_index,
            number_of_parallel_subtasks=self.parallelism,
            max_number_of_parallel_subtasks=self.max_parallelism,
            attempt_number=self.attempt_number,
        )
