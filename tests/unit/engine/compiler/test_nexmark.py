"""The Nexmark benchmark's generator and queries (benchmarks/nexmark.py): Nexmark's
proportions, every query compiles to a DataflowJob, and the functions of the stateful queries
(q3, q4, q7, q11), driven here in plain Python as their operators would (keyed state, timers
at the watermark, tumbling and merging session windows), give what a brute-force reference of
each query's definition gives; no Spark. bench_nexmark.py checks both engines' outputs equal."""

from __future__ import annotations

import collections
import heapq
import itertools
import random
import sys
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from kube_helpers import REPO_ROOT

pytestmark = pytest.mark.unit

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import bench_nexmark  # noqa: E402
import nexmark  # noqa: E402

#: Three 10 s windows, the last one partial.
EVENTS = [nexmark.event(i) for i in range(25_000)]
BIDS = [e for e in EVENTS if e[0] == nexmark.BID]


def test_events_keep_nexmarks_proportions_and_time() -> None:
    events = [nexmark.event(i) for i in range(5000)]
    kinds = collections.Counter(e[0] for e in events)
    assert kinds == {nexmark.PERSON: 100, nexmark.AUCTION: 300, nexmark.BID: 4600}
    assert [e[-1] for e in events] == list(range(5000))  # one event per millisecond
    people = {e[1] for e in events if e[0] == nexmark.PERSON}
    auctions = {e[1] for e in events if e[0] == nexmark.AUCTION}
    assert {e[2] for e in events if e[0] == nexmark.AUCTION} <= people  # known sellers
    bids = [e for e in events if e[0] == nexmark.BID]
    assert {b[1] for b in bids} <= auctions and {b[2] for b in bids} <= people
    assert nexmark.event(1234) == events[1234]  # the same event every time


@pytest.mark.parametrize("query", sorted(nexmark.QUERIES))
def test_each_query_is_a_dataflow_job(query: str) -> None:
    job = load_manifest_text(bench_nexmark.manifest(query, 1000))
    compiled = compile_job(job.spec, job.metadata.name)
    assert compiled.continuous  # unbounded events: it runs in epochs


def test_the_floor_runs_each_stateless_query_s_own_functions() -> None:
    assert set(bench_nexmark.FLOOR_FUNCTIONS) == set(bench_nexmark.STREAMING_QUERIES)
    assert bench_nexmark.floor_seconds("q2", 1000, repeats=1) > 0


# -- brute-force references of the stateful queries' definitions -----------------------------

def _window_end(time: int) -> int:
    return time // 10_000 * 10_000 + 10_000


def reference_q3(events: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    people = {e[1]: e for e in events if e[0] == nexmark.PERSON and e[3] in ("OR", "ID", "CA")}
    return sorted((people[a[2]][2], people[a[2]][3], a[1]) for a in events
                  if a[0] == nexmark.AUCTION and a[3] == 10 and a[2] in people)


def reference_q4(events: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    category = {a[1]: a[3] for a in events if a[0] == nexmark.AUCTION}
    closing: dict[tuple[int, int], int] = {}
    for b in events:
        if b[0] == nexmark.BID:
            key = (b[1], _window_end(b[4]))
            closing[key] = max(closing.get(key, 0), b[3])
    prices = collections.defaultdict(list)
    for (auction, end), price in closing.items():
        prices[end, category[auction]].append(price)
    return sorted((end, c, sum(p) / len(p)) for (end, c), p in prices.items())


def reference_q7(bids: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    windows = collections.defaultdict(list)
    for b in bids:
        windows[_window_end(b[4])].append(b)
    highest = {end: max(b[3] for b in window) for end, window in windows.items()}
    return sorted((end, b[1], b[2], b[3]) for end, window in windows.items()
                  for b in window if b[3] == highest[end])


def reference_q11(bids: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    times = collections.defaultdict(list)
    for b in bids:
        times[b[2]].append(b[4])
    sessions = []
    for bidder, ts in times.items():
        ts.sort()
        start = 0
        for i in range(1, len(ts) + 1):
            if i == len(ts) or ts[i] - ts[i - 1] >= 10_000:
                sessions.append((bidder, i - start, ts[start], ts[i - 1] + 10_000))
                start = i
    return sorted(sessions)


# -- the functions driven as their operators drive them ---------------------------------------

class Keyed:
    """Keyed state and event-time timers of one operator: ``get_state``, ``get_list_state``,
    ``get_map_state`` (as a RuntimeContext) of the current key, and the context passed to
    ``process_element*`` and ``on_timer``."""

    def __init__(self) -> None:
        self.key: Any = None
        self.states: dict[tuple[str, Any], Any] = {}
        self.timers: list[tuple[int, Any]] = []  # a heap
        self.registered: set[tuple[int, Any]] = set()

    def _state(self, descriptor: Any, empty: Callable[[], Any]) -> Any:
        keyed, name = self, descriptor.name if hasattr(descriptor, "name") else descriptor

        class State:
            def _get(self) -> Any:
                return keyed.states.get((name, keyed.key), empty())

            def _set(self, value: Any) -> None:
                keyed.states[name, keyed.key] = value

            def value(self) -> Any:
                return self._get()

            def update(self, value: Any) -> None:
                self._set(value)

            def clear(self) -> None:
                keyed.states.pop((name, keyed.key), None)

            def get(self, key: Any = None) -> Any:
                return self._get() if key is None else self._get()[key]

            def add(self, value: Any) -> None:
                self._set([*self._get(), value])

            def put(self, key: Any, value: Any) -> None:
                self._set({**self._get(), key: value})

            def contains(self, key: Any) -> bool:
                return key in self._get()

            def remove(self, key: Any) -> None:
                self._set({k: v for k, v in self._get().items() if k != key})

        return State()

    def get_state(self, descriptor: Any) -> Any:
        return self._state(descriptor, lambda: None)

    def get_list_state(self, descriptor: Any) -> Any:
        return self._state(descriptor, list)

    def get_map_state(self, descriptor: Any) -> Any:
        return self._state(descriptor, dict)

    def timer_service(self) -> Keyed:
        return self

    def register_event_time_timer(self, timestamp: int) -> None:
        if (timestamp, self.key) not in self.registered:  # one timer per key and time
            self.registered.add((timestamp, self.key))
            heapq.heappush(self.timers, (timestamp, self.key))

    def get_current_key(self) -> Any:
        return self.key


def _results(result: Iterable[Any] | None) -> list[Any]:
    return list(result) if result is not None else []


def co_process(function: Any, arrivals: Iterable[tuple[int, tuple[Any, ...], int]],
               keys: tuple[Callable[[Any], Any], Callable[[Any], Any]]) -> list[tuple[int, Any]]:
    """``(timestamp, output)`` of a KeyedCoProcessFunction given ``(input, value, watermark
    after it)`` arrivals; an event-time timer fires (its outputs at its timestamp) once the
    watermark reaches it, and every timer at the end of input."""
    keyed = Keyed()
    function.open(keyed)
    out: list[tuple[int, Any]] = []

    def fire(watermark: int) -> None:
        while keyed.timers and keyed.timers[0][0] <= watermark:
            timestamp, key = heapq.heappop(keyed.timers)
            keyed.registered.discard((timestamp, key))
            keyed.key = key
            out.extend((timestamp, r) for r in _results(function.on_timer(timestamp, keyed)))

    for number, value, watermark in arrivals:
        keyed.key = keys[number - 1](value)
        process = function.process_element1 if number == 1 else function.process_element2
        out.extend((value[-1], r) for r in _results(process(value, keyed)))
        fire(watermark)
    fire(2 ** 62)
    return out


class _Elements:
    """A window's elements as they are (a ProcessWindowFunction's window)."""

    def create_accumulator(self) -> list[Any]:
        return []

    def add(self, value: Any, accumulator: list[Any]) -> list[Any]:
        accumulator.append(value)
        return accumulator

    def get_result(self, accumulator: list[Any]) -> list[Any]:
        return accumulator


class _Aggregated(_Elements):
    """An AggregateFunction's window: the process function gets its one result."""

    def __init__(self, aggregate: Any) -> None:
        self.aggregate = aggregate

    def create_accumulator(self) -> Any:
        return self.aggregate.create_accumulator()

    def add(self, value: Any, accumulator: Any) -> Any:
        return self.aggregate.add(value, accumulator)

    def get_result(self, accumulator: Any) -> list[Any]:
        return [self.aggregate.get_result(accumulator)]


class Window:
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    def window(self) -> Window:
        return self


def tumbling(elements: Iterable[tuple[int, Any]], key: Callable[[Any], Any], function: Any,
             aggregate: Any = None, size: int = 10_000) -> list[tuple[int, Any]]:
    """``(timestamp, output)`` of ``key_by(key).window(tumbling size).aggregate(aggregate,
    function)`` on ``(timestamp, value)`` elements, or ``.process(function)`` without an
    aggregate; outputs at their window's last millisecond."""
    aggregate = aggregate or _Elements()
    accumulators: dict[tuple[Any, int], Any] = {}
    for timestamp, value in elements:
        window = (key(value), timestamp - timestamp % size)
        accumulators[window] = aggregate.add(
            value, accumulators.get(window, aggregate.create_accumulator()))
    return [(start + size - 1, r) for (k, start), acc in sorted(accumulators.items())
            for r in function.process(k, Window(start, start + size),
                                      aggregate.get_result(acc))]


def sessions(elements: Iterable[tuple[int, Any]], key: Callable[[Any], Any], aggregate: Any,
             function: Any, gap: int = 10_000) -> list[Any]:
    """The outputs of ``key_by(key).window(sessions of gap).aggregate(aggregate, function)``:
    each element's window ``[t, t + gap)`` merged (accumulators and all) with every window of
    its key that it overlaps."""
    windows: dict[Any, list[tuple[int, int, Any]]] = collections.defaultdict(list)
    for timestamp, value in elements:
        start, end = timestamp, timestamp + gap
        accumulator = aggregate.add(value, aggregate.create_accumulator())
        kept = []
        for other in windows[key(value)]:
            if other[0] < end and start < other[1]:
                start, end = min(start, other[0]), max(end, other[1])
                accumulator = aggregate.merge(accumulator, other[2])
            else:
                kept.append(other)
        windows[key(value)] = [*kept, (start, end, accumulator)]
    return [r for k, ws in windows.items() for start, end, acc in ws
            for r in function.process(k, Window(start, end), [aggregate.get_result(acc)])]


def two_subtasks(events: list[tuple[Any, ...]],
                 number: Callable[[tuple[Any, ...]], int | None]
                 ) -> list[tuple[int, tuple[Any, ...], int]]:
    """Arrivals from two source subtasks, each with half of the events in order (as
    NumberSequenceSource splits them), taken in turns: the watermark is the least of their
    latest timestamps, less 1 (monotonous timestamps); ``number`` is the input of an event,
    or None for one filtered out."""
    half = len(events) // 2
    latest = [-1, -1]
    arrivals = []
    for pair in itertools.zip_longest(events[:half], events[half:]):
        for subtask, e in enumerate(pair):
            if e is not None:
                latest[subtask] = e[-1]
                n = number(e)
                if n is not None:
                    arrivals.append((n, e, min(latest) - 1))
    return arrivals


def test_q3_joins_a_person_and_an_auction_whichever_comes_first() -> None:
    expected = reference_q3(EVENTS)
    assert len(expected) > 50

    def number(e: tuple[Any, ...]) -> int | None:
        if nexmark.is_person(e):
            return 1
        return 2 if nexmark.is_local_auction(e) else None

    keys = (nexmark.person_id, nexmark.seller_of)
    in_order = two_subtasks(EVENTS, number)
    auctions_first = sorted(in_order, key=lambda arrival: -arrival[0])
    for arrivals in (in_order, auctions_first):
        out = co_process(nexmark.LocalItems(), arrivals, keys)
        assert sorted(r for _, r in out) == expected


def test_q4_averages_each_window_s_closing_prices_per_category() -> None:
    def number(e: tuple[Any, ...]) -> int | None:
        return 1 if nexmark.is_auction(e) else 2 if nexmark.is_bid(e) else None

    arrivals = two_subtasks(EVENTS, number)
    closing = co_process(nexmark.ClosingPrices(), arrivals,
                         (nexmark.auction_id, nexmark.auction_of))
    assert all(timestamp == end - 1 for timestamp, (end, _, _) in closing)  # in its window
    averages = tumbling(closing, nexmark.category_of, nexmark.CategoryAverage(),
                        _Aggregated(nexmark.AveragePrice()))
    expected = reference_q4(EVENTS)
    assert {end for end, _, _ in expected} == {10_000, 20_000, 30_000}
    assert sorted(r for _, r in averages) == expected


def test_q7_keeps_every_bid_of_the_window_s_highest_price() -> None:
    shuffled = BIDS[:]
    random.Random(7).shuffle(shuffled)
    highest = tumbling(((b[4], b) for b in shuffled), nexmark.auction_of,
                       nexmark.WindowHighest(), _Aggregated(nexmark.HighestBid()))
    out = tumbling(highest, nexmark.window_end_of, nexmark.HighestBids())
    assert sorted(r for _, r in out) == reference_q7(BIDS)
    tied = [(nexmark.BID, 1, 7, 500, 1), (nexmark.BID, 2, 8, 500, 2), (nexmark.BID, 1, 9, 400, 3),
            (nexmark.BID, 3, 7, 500, 4)]
    out = tumbling(tumbling(((b[4], b) for b in tied), nexmark.auction_of,
                            nexmark.WindowHighest(), _Aggregated(nexmark.HighestBid())),
                   nexmark.window_end_of, nexmark.HighestBids())
    assert [r for _, r in out] == [(10_000, 1, 7, 500), (10_000, 2, 8, 500), (10_000, 3, 7, 500)]
    highest_bid = nexmark.HighestBid()
    assert highest_bid.merge((5, [(1, 1)]), (5, [(2, 2)])) == (5, [(1, 1), (2, 2)])
    assert highest_bid.merge((4, [(1, 1)]), (5, [(2, 2)])) == (5, [(2, 2)])


def test_q11_counts_each_bidder_s_bids_per_session() -> None:
    shuffled = BIDS[:]
    random.Random(11).shuffle(shuffled)  # sessions merge, whatever the order
    out = sessions(((b[4], b) for b in shuffled), nexmark.bidder_of, nexmark.CountBids(),
                   nexmark.BidderSession())
    expected = reference_q11(BIDS)
    assert sorted(out) == expected
    assert sum(count for _, count, _, _ in expected) == len(BIDS)
