"""Flink's Outputs: how a record leaves an operator inside a chain.

Per-record work happens in closures built by :meth:`Output.bind` when the owning operator opens
(every downstream operator is open by then), so the hot path does no attribute lookups. Record
counting is shared rather than repeated: the ``numRecordsOut`` counter of an operator *is* the
``numRecordsIn`` counter of its chained successor (or its RecordWriter's count), as every output
of an operator receives every record it emits.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from copy import deepcopy
from typing import Any, Protocol

Collect = Callable[[Any], None]
CollectAll = Callable[[Iterable[Any]], None]
#: What a fused run calls for one of its outputs: a ``collect``, and whether the run must hand
#: it a copy of a record that could change (the copy a RecordWriterOutput would make).
Target = tuple[Collect, bool]

#: Types whose values cannot change, so chained operators may share them even without reuse.
_ATOMIC: frozenset[type] = frozenset({int, float, str, bytes, bool, type(None), complex})


class Counter:
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


def copy_record(record: Any) -> Any:
    """What Flink's ``serializer.copy`` does: an independent value (atoms and tuples of atoms
    are returned as they are, since nothing can change them)."""
    if type(record) is tuple:
        for item in record:
            if type(item) not in _ATOMIC:
                return deepcopy(record)
        return record
    if type(record) in _ATOMIC:
        return record
    return deepcopy(record)


def targets_of(output: Output, collect: Collect) -> tuple[Target, ...]:
    """What a fused run calls for ``output``, bound to ``collect``: its targets, or else
    ``collect`` itself, which makes any copy it needs."""
    return output.targets or ((collect, False),)


def each(process: Collect) -> CollectAll:
    """``process`` of every record, in order."""

    def process_all(records: Iterable[Any]) -> None:
        for record in records:
            process(record)

    return process_all


class ProcessingOperator(Protocol):
    """The part of a stream operator an Output feeds."""

    records_in: Counter
    process_element: Collect
    #: A loop of ``process_element`` over many records, if the operator has one of its own.
    process_all: CollectAll | None
    #: Copy each input record first (set by a CopyingChainingOutput before the operator opens).
    copy_input: bool

    def process_watermark(self, timestamp: int) -> None: ...

    def process_watermark_status(self, idle: bool) -> None: ...


class Output(ABC):
    #: ``numRecordsOut`` of the operator owning this output.
    counter: Counter
    #: Once bound, what a fused run calls in place of ``collect`` (none: it calls ``collect``).
    targets: tuple[Target, ...] = ()

    @abstractmethod
    def bind(self) -> tuple[Collect, CollectAll]:
        """The ``collect`` / ``collect_all`` callables; downstream operators must be open."""

    @abstractmethod
    def emit_watermark(self, timestamp: int) -> None:
        """Passes a watermark on, behind every record collected before it."""

    @abstractmethod
    def emit_watermark_status(self, idle: bool) -> None:
        """Passes an idle/active status on."""


class ChainingOutput(Output):
    """Object reuse: the next operator receives the very object emitted."""

    def __init__(self, operator: ProcessingOperator) -> None:
        self.operator = operator
        self.counter = operator.records_in

    def bind(self) -> tuple[Collect, CollectAll]:
        process, process_all = self.operator.process_element, self.operator.process_all
        self.targets = ((process, False),)
        return process, process_all or each(process)

    def emit_watermark(self, timestamp: int) -> None:
        self.operator.process_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        self.operator.process_watermark_status(idle)


class CopyingChainingOutput(ChainingOutput):
    """No object reuse (the default): the next operator receives a copy of each record.

    The copy is made in the first lines of the next operator's ``process_element`` (see
    :func:`input_copier`) rather than in a wrapper, which would cost a call per record.
    """

    def __init__(self, operator: ProcessingOperator) -> None:
        super().__init__(operator)
        operator.copy_input = True


def input_copier(copying: bool) -> tuple[bool, frozenset[type], Callable[[Any], Any]]:
    """What an operator's ``process_element`` inlines to copy its input when ``copying``::

        if copying and type(value) not in atomic:
            value = copy(value)
    """
    return copying, _ATOMIC, copy_record


class RecordWriterLike(Protocol):
    counter: Counter

    def bind(self) -> tuple[Collect, CollectAll]: ...

    def emit_watermark(self, timestamp: int) -> None: ...

    def emit_watermark_status(self, idle: bool) -> None: ...


class RecordWriterOutput(Output):
    """Hands records to a RecordWriter (a network exchange), converted to the stream's
    declared type first, as PyFlink's coder converts what leaves a Python operator."""

    def __init__(self, writer: RecordWriterLike, copying: bool = False,
                 convert: Callable[[Any], Any] | None = None) -> None:
        self.writer = writer
        self.counter = writer.counter
        #: Copy before the writer keeps a record: the operator, or one chained to it, could
        #: change it before the writer's batch leaves (see ``OperatorChain._outputs``).
        self.copying = copying
        #: The conversion to the declared type (None: records are Python objects of any type).
        self.convert = convert

    def bind(self) -> tuple[Collect, CollectAll]:
        collect, collect_all = self.writer.bind()
        convert = self.convert
        self.targets = ((collect, self.copying and convert is None),)
        if convert is None and not self.copying:
            return collect, collect_all
        prepare: Callable[[Any], Any]
        if convert is None:
            prepare = copy_record
        elif self.copying:
            prepare = lambda record: convert(copy_record(record))  # noqa: E731
        else:
            prepare = convert

        def preparing_collect(record: Any) -> None:
            collect(prepare(record))

        if convert is not None:
            self.targets = ((preparing_collect, False),)

        def preparing_collect_all(records: Iterable[Any]) -> None:
            collect_all(map(prepare, records))

        return preparing_collect, preparing_collect_all

    def emit_watermark(self, timestamp: int) -> None:
        self.writer.emit_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        self.writer.emit_watermark_status(idle)


class BroadcastingOutputCollector(Output):
    """Several outputs of one operator; each receives every record, network outputs first."""

    def __init__(self, outputs: Sequence[Output]) -> None:
        self.outputs = list(outputs)
        self.counter = self.outputs[0].counter

    def bind(self) -> tuple[Collect, CollectAll]:
        collects = tuple(output.bind()[0] for output in self.outputs)
        self.targets = tuple(target for output, collect in zip(self.outputs, collects, strict=True)
                             for target in targets_of(output, collect))
        if len(collects) == 2:  # the common fan-out, without a loop per record
            first, second = collects

            def collect(record: Any) -> None:
                first(record)
                second(record)
        else:

            def collect(record: Any) -> None:
                for target in collects:
                    target(record)

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                for target in collects:
                    target(record)

        return collect, collect_all

    def emit_watermark(self, timestamp: int) -> None:
        for output in self.outputs:
            output.emit_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        for output in self.outputs:
            output.emit_watermark_status(idle)


class WithSideOutputs(Output):
    """An operator's main output, whose watermarks also reach its side outputs (in Flink a
    watermark goes to every output of an operator)."""

    def __init__(self, main: Output, side_outputs: Sequence[Output]) -> None:
        self.main = main
        self.side_outputs = list(side_outputs)
        self.counter = main.counter

    def bind(self) -> tuple[Collect, CollectAll]:
        return self.main.bind()

    def emit_watermark(self, timestamp: int) -> None:
        self.main.emit_watermark(timestamp)
        for output in self.side_outputs:
            output.emit_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        self.main.emit_watermark_status(idle)
        for output in self.side_outputs:
            output.emit_watermark_status(idle)


class CountingDiscardOutput(Output):
    """An operator without outputs: its records are counted and dropped."""

    def __init__(self) -> None:
        self.counter = Counter()

    def bind(self) -> tuple[Collect, CollectAll]:
        counter = self.counter

        def collect(record: Any) -> None:
            counter.count += 1

        def collect_all(records: Iterable[Any]) -> None:
            for _ in records:
                counter.count += 1

        return collect, collect_all

    def emit_watermark(self, timestamp: int) -> None:
        """Nothing downstream needs it."""

    def emit_watermark_status(self, idle: bool) -> None:
        """Nothing downstream needs it."""
