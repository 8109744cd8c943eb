"""What user functions see of the task running them: Flink's RuntimeContext."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class KeyedStateStore(Protocol):
    """What a RuntimeContext hands keyed-state requests to (a HeapKeyedStateBackend)."""

    def get_state(self, descriptor: Any) -> Any: ...

    def get_list_state(self, descriptor: Any) -> Any: ...

    def get_map_state(self, descriptor: Any) -> Any: ...

    def get_reducing_state(self, descriptor: Any) -> Any: ...

    def get_aggregating_state(self, descriptor: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class RuntimeContext:
    """Handed to a rich function's ``open(ctx)``: Flink's RuntimeContext, with PyFlink's getter
    names and keyed state (only functions of keyed operators have a state store)."""

    job_name: str
    #: The JobVertex (chain) name, e.g. ``Flat Map -> Filter``, as Flink's ``getTaskName``.
    task_name: str
    operator_name: str
    index_of_this_subtask: int
    number_of_parallel_subtasks: int
    max_number_of_parallel_subtasks: int
    #: The Spark task attempt running this subtask (0 for the first).
    attempt_number: int
    state_store: KeyedStateStore | None = None

    @property
    def task_name_with_subtasks(self) -> str:
        """``Flat Map (1/2)#0``, as Flink prints it."""
        return (f"{self.task_name} ({self.index_of_this_subtask + 1}/"
                f"{self.number_of_parallel_subtasks})#{self.attempt_number}")

    def get_task_name(self) -> str:
        return self.task_name

    def get_task_name_with_subtasks(self) -> str:
        return self.task_name_with_subtasks

    def get_index_of_this_subtask(self) -> int:
        return self.index_of_this_subtask

    def get_number_of_parallel_subtasks(self) -> int:
        return self.number_of_parallel_subtasks

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self.max_number_of_parallel_subtasks

    def get_attempt_number(self) -> int:
        return self.attempt_number

    def _store(self) -> KeyedStateStore:
        if self.state_store is None:
            raise TypeError(f"operator {self.operator_name!r}: keyed state is only available "
                            "to functions of keyed operators (after key_by())")
        return self.state_store

    def get_state(self, state_descriptor: Any) -> Any:
        return self._store().get_state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        return self._store().get_list_state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        return self._store().get_map_state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        return self._store().get_reducing_state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        return self._store().get_aggregating_state(state_descriptor)


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
    #: The epoch this run of a continuous job computes; None in a run to the end of input.
    epoch: int | None = None

    def runtime_context(self, operator_name: str,
                        state_store: KeyedStateStore | None = None) -> RuntimeContext:
        return RuntimeContext(
            job_name=self.job_name,
            task_name=self.task_name,
            operator_name=operator_name,
            index_of_this_subtask=self.subtask_index,
            number_of_parallel_subtasks=self.parallelism,
            max_number_of_parallel_subtasks=self.max_parallelism,
            attempt_number=self.attempt_number,
            state_store=state_store,
        )
