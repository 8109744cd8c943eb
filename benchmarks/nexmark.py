"""Nexmark's events and queries q0, q1, q2, q3, q4, q5, q7, q8 and q11 as DataStream programs,
one text for two engines: it imports PyFlink where PyFlink is installed and this engine's API
otherwise (the same program, as docs/pyflink.md promises), so bench_nexmark.py runs the very
same query code on both.

The generator keeps Nexmark's proportions (of every 50 events: 1 person, 3 auctions, 46 bids;
bids mostly on recent "hot" auctions, auctions sold by recent people) and its event time (one
event per millisecond), with a cheap multiplicative hash instead of a random generator so that
event ``i`` is the same on every engine and every subtask.

The stateful queries use only what both engines have: keyed windows (tumbling, sliding,
sessions) with aggregate and process window functions, and a KeyedCoProcessFunction with
value, list and map state and event-time timers. Where Nexmark's own definition depends on
more (q4's auction expiry), the query's docstring says how it is simplified.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

try:
    from pyflink.common import Time, Types, WatermarkStrategy
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import DataStream
    from pyflink.datastream.functions import (
        AggregateFunction,
        KeyedCoProcessFunction,
        ProcessWindowFunction,
    )
    from pyflink.datastream.state import (
        ListStateDescriptor,
        MapStateDescriptor,
        ValueStateDescriptor,
    )
    from pyflink.datastream.window import (
        EventTimeSessionWindows,
        SlidingEventTimeWindows,
        TumblingEventTimeWindows,
    )
    ENGINE = "pyflink"
except ImportError:
    from dataflow_engine.api.common import Time, Types, WatermarkStrategy
    from dataflow_engine.api.common.watermark_strategy import TimestampAssigner
    from dataflow_engine.api.datastream import DataStream
    from dataflow_engine.api.datastream.functions import (
        AggregateFunction,
        KeyedCoProcessFunction,
        ProcessWindowFunction,
    )
    from dataflow_engine.api.datastream.state import (
        ListStateDescriptor,
        MapStateDescriptor,
        ValueStateDescriptor,
    )
    from dataflow_engine.api.datastream.window import (
        EventTimeSessionWindows,
        SlidingEventTimeWindows,
        TumblingEventTimeWindows,
    )
    ENGINE = "dataflow"

PERSON, AUCTION, BID = 0, 1, 2
EVENTS_PER_EPOCH = 50  # 1 person, 3 auctions, 46 bids
AUCTIONS_PER_EPOCH = 3
FIRST_ID = 1000
HOT_AUCTIONS = 100
STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
#: q3's states and category.
LOCAL_STATES = ("OR", "ID", "CA")
LOCAL_CATEGORY = 10
#: The windows of q4, q7 (tumbling) and q11 (the session gap), in ms.
WINDOW_MS = 10_000
SESSION_GAP_MS = 10_000


def _hash(i: int) -> int:
    return (i * 2654435761) & 0xFFFFFFFF


def event(i: int) -> tuple[Any, ...]:
    """Event ``i``, a tuple whose first field is its kind and last its time (ms):
    person ``(PERSON, id, name, state, time)``, auction ``(AUCTION, id, seller, category,
    initial bid, time)``, bid ``(BID, auction, bidder, price, time)``."""
    epoch, offset = divmod(i, EVENTS_PER_EPOCH)
    r = _hash(i)
    if offset == 0:
        return PERSON, FIRST_ID + epoch, f"person-{epoch}", STATES[r % len(STATES)], i
    if offset <= AUCTIONS_PER_EPOCH:
        seller = FIRST_ID + max(0, epoch - r % 10)
        return (AUCTION, FIRST_ID + epoch * AUCTIONS_PER_EPOCH + offset - 1, seller,
                10 + r % 5, 100 + (r >> 8) % 1000, i)
    newest = epoch * AUCTIONS_PER_EPOCH + AUCTIONS_PER_EPOCH - 1
    back = (r >> 8) % HOT_AUCTIONS if r % 10 else (r >> 8) % (newest + 1)
    bidder = FIRST_ID + max(0, epoch - (r >> 16) % 50)
    return BID, FIRST_ID + max(0, newest - back), bidder, 100 + (r >> 4) % 10_000, i


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[-1])


def watermarks() -> Any:
    return WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())


# Named functions, not lambdas, so that a query's job can be written as a manifest.

def is_bid(e: tuple[Any, ...]) -> bool:
    return bool(e[0] == BID)


def is_person(e: tuple[Any, ...]) -> bool:
    return bool(e[0] == PERSON)


def is_auction(e: tuple[Any, ...]) -> bool:
    return bool(e[0] == AUCTION)


def bid_fields(b: tuple[Any, ...]) -> tuple[Any, ...]:
    return b[1], b[2], b[3], b[4]


def in_euros(b: tuple[Any, ...]) -> tuple[Any, ...]:
    return b[1], b[2], round(b[3] * 0.908, 2), b[4]


def is_selected_bid(e: tuple[Any, ...]) -> bool:
    return bool(e[0] == BID and e[1] % 123 == 0)


def auction_and_price(b: tuple[Any, ...]) -> tuple[Any, ...]:
    return b[1], b[3]


def auction_of(b: tuple[Any, ...]) -> int:
    return int(b[1])


def window_end_of(count: tuple[Any, ...]) -> int:
    return int(count[0])


def seller_or_person(e: tuple[Any, ...]) -> int:
    return int(e[2] if e[0] == AUCTION else e[1])


def q0(events: DataStream) -> DataStream:
    """Pass-through: every bid's fields."""
    return events.filter(is_bid).map(bid_fields)


def q1(events: DataStream) -> DataStream:
    """Currency conversion: bid prices from dollars to euros."""
    return events.filter(is_bid).map(in_euros)


def q2(events: DataStream) -> DataStream:
    """Selection: the bids on every 123rd auction."""
    return events.filter(is_selected_bid).map(auction_and_price)


class CountBids(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


class AuctionWindowCount(ProcessWindowFunction):
    """``(window end, auction, bids)``, timestamped (as every window result) at the window's
    last millisecond, so the next window groups the counts of one sliding window."""

    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterator[Any]:
        for count in elements:
            yield context.window().end, key, count


class HottestAuctions(ProcessWindowFunction):
    """The auctions with the most bids in one sliding window."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        counts = list(elements)
        most = max(count for _, _, count in counts)
        yield from sorted(c for c in counts if c[2] == most)


def q5(events: DataStream) -> DataStream:
    """Hot items: per 10 s window sliding by 2 s, the auctions with the most bids."""
    counts = (events.filter(is_bid).key_by(auction_of)
              .window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(2)))
              .aggregate(CountBids(), AuctionWindowCount()))
    return (counts.key_by(window_end_of)
            .window(TumblingEventTimeWindows.of(Time.seconds(2)))
            .process(HottestAuctions()))


class NewSellers(ProcessWindowFunction):
    """A person who opened an auction in the window they registered in: ``(id, name, window
    start)``."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        both = list(elements)
        if any(e[0] == AUCTION for e in both):
            for person in both:
                if person[0] == PERSON:
                    yield person[1], person[2], context.window().start


def q8(events: DataStream) -> DataStream:
    """Monitor new users: people who registered and opened an auction in the same 10 s
    tumbling window (Nexmark's window join of persons and auctions, as a keyed window over
    both, which both engines run alike)."""
    people = events.filter(is_person)
    auctions = events.filter(is_auction)
    return (people.union(auctions).key_by(seller_or_person)
            .window(TumblingEventTimeWindows.of(Time.seconds(10)))
            .process(NewSellers()))


def is_local_auction(e: tuple[Any, ...]) -> bool:
    return bool(e[0] == AUCTION and e[3] == LOCAL_CATEGORY)


def person_id(p: tuple[Any, ...]) -> int:
    return int(p[1])


def seller_of(a: tuple[Any, ...]) -> int:
    return int(a[2])


class LocalItems(KeyedCoProcessFunction):
    """q3's join, keyed by person id (input 1: persons) and seller (input 2: auctions): the
    person in value state, and a seller's auctions that came before the person in list state
    (the generator's sellers are known people, but the two inputs' order across subtasks is
    not). Every person comes in and only the local ones are kept, so that no auction waits
    for a person who will never match."""

    def open(self, runtime_context: Any) -> None:
        self.person = runtime_context.get_state(
            ValueStateDescriptor("person", Types.PICKLED_BYTE_ARRAY()))
        self.waiting = runtime_context.get_list_state(
            ListStateDescriptor("auctions", Types.PICKLED_BYTE_ARRAY()))

    def process_element1(self, person: Any, ctx: Any) -> Iterator[Any]:
        name, state = person[2], person[3]
        if state in LOCAL_STATES:
            self.person.update((name, state))
            for auction in self.waiting.get() or ():
                yield name, state, auction
        else:
            self.person.update(())  # known, not local: its auctions are dropped
        self.waiting.clear()

    def process_element2(self, auction: Any, ctx: Any) -> Iterator[Any]:
        person = self.person.value()
        if person is None:
            self.waiting.add(auction[1])
        elif person:
            yield person[0], person[1], auction[1]


def q3(events: DataStream) -> DataStream:
    """Local item suggestion: ``(name, state, auction)`` of every auction in category 10 whose
    seller lives in Oregon, Idaho or California (a continuous inner join of people and
    auctions on the seller's id)."""
    people = events.filter(is_person)
    auctions = events.filter(is_local_auction)
    return people.connect(auctions).key_by(person_id, seller_of).process(LocalItems())


def auction_id(a: tuple[Any, ...]) -> int:
    return int(a[1])


class ClosingPrices(KeyedCoProcessFunction):
    """q4's closing prices, keyed by auction (input 1: auctions, input 2: their bids): the
    auction's category in value state, the highest bid per 10 s window in map state (window
    end -> price), and an event-time timer at each window's last millisecond that emits
    ``(window end, category, closing price)`` with that timestamp. The auction is older than
    its bids, so the watermark (the least of both inputs') brings it before the timer."""

    def open(self, runtime_context: Any) -> None:
        self.category = runtime_context.get_state(
            ValueStateDescriptor("category", Types.PICKLED_BYTE_ARRAY()))
        self.highest = runtime_context.get_map_state(
            MapStateDescriptor("highest", Types.PICKLED_BYTE_ARRAY(),
                               Types.PICKLED_BYTE_ARRAY()))

    def process_element1(self, auction: Any, ctx: Any) -> None:
        self.category.update(auction[3])

    def process_element2(self, bid: Any, ctx: Any) -> None:
        end = bid[4] - bid[4] % WINDOW_MS + WINDOW_MS
        if not self.highest.contains(end):
            self.highest.put(end, bid[3])
            ctx.timer_service().register_event_time_timer(end - 1)
        elif bid[3] > self.highest.get(end):
            self.highest.put(end, bid[3])

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        end = timestamp + 1
        price = self.highest.get(end)
        self.highest.remove(end)
        yield end, self.category.value(), price


def category_of(closing: tuple[Any, ...]) -> int:
    return int(closing[1])


class AveragePrice(AggregateFunction):
    """The mean of ``(window end, category, price)`` prices, over ``(sum, count)``."""

    def create_accumulator(self) -> tuple[int, int]:
        return 0, 0

    def add(self, value: Any, accumulator: tuple[int, int]) -> tuple[int, int]:
        return accumulator[0] + value[2], accumulator[1] + 1

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return a[0] + b[0], a[1] + b[1]


class CategoryAverage(ProcessWindowFunction):
    """``(window end, category, average closing price)``."""

    def process(self, key: Any, context: Any, elements: Iterable[float]) -> Iterator[Any]:
        for average in elements:
            yield context.window().end, key, average


def q4(events: DataStream) -> DataStream:
    """Average price per category: an auction's closing price is its highest bid, and the
    average of the closing prices per category. Simplified from Nexmark (where an auction
    closes at its expiry and the average runs over all closed auctions) so that the output is
    deterministic and bounded: an auction "closes" at the end of every 10 s tumbling
    event-time window it had bids in, and the averages are per such window:
    ``(window end, category, average)``."""
    auctions = events.filter(is_auction)
    bids = events.filter(is_bid)
    closing = auctions.connect(bids).key_by(auction_id, auction_of).process(ClosingPrices())
    return (closing.key_by(category_of)
            .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
            .aggregate(AveragePrice(), CategoryAverage()))


class HighestBid(AggregateFunction):
    """The bids with the highest price, all ties, as ``(price, [(auction, bidder), ...])``."""

    def create_accumulator(self) -> tuple[int, list[Any]]:
        return -1, []

    def add(self, value: Any, accumulator: tuple[int, list[Any]]) -> tuple[int, list[Any]]:
        price, bids = accumulator
        if value[3] > price:
            return value[3], [(value[1], value[2])]
        if value[3] == price:
            return price, [*bids, (value[1], value[2])]
        return accumulator

    def get_result(self, accumulator: tuple[int, list[Any]]) -> tuple[int, list[Any]]:
        return accumulator

    def merge(self, a: tuple[int, list[Any]], b: tuple[int, list[Any]]
              ) -> tuple[int, list[Any]]:
        if a[0] != b[0]:
            return a if a[0] > b[0] else b
        return a[0], a[1] + b[1]


class WindowHighest(ProcessWindowFunction):
    """``(window end, price, [(auction, bidder), ...])``: one auction's highest bids."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        for price, bids in elements:
            yield context.window().end, price, bids


class HighestBids(ProcessWindowFunction):
    """The window's highest bids over all auctions: ``(window end, auction, bidder, price)``,
    sorted."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        highest = list(elements)
        price = max(h[1] for h in highest)
        yield from sorted((key, auction, bidder, price)
                          for _, p, bids in highest if p == price for auction, bidder in bids)


def q7(events: DataStream) -> DataStream:
    """Highest bid: per 10 s tumbling window, the bids with the highest price, all ties
    (``(window end, auction, bidder, price)``): the highest per auction first, in parallel,
    then the highest of those per window."""
    highest = (events.filter(is_bid).key_by(auction_of)
               .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
               .aggregate(HighestBid(), WindowHighest()))
    return (highest.key_by(window_end_of)
            .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
            .process(HighestBids()))


def bidder_of(b: tuple[Any, ...]) -> int:
    return int(b[2])


class BidderSession(ProcessWindowFunction):
    """``(bidder, bids, session start, session end)``."""

    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterator[Any]:
        window = context.window()
        for count in elements:
            yield key, count, window.start, window.end


def q11(events: DataStream) -> DataStream:
    """User sessions: the bids of each bidder per event-time session (a 10 s gap):
    ``(bidder, bids, start, end)``."""
    return (events.filter(is_bid).key_by(bidder_of)
            .window(EventTimeSessionWindows.with_gap(Time.milliseconds(SESSION_GAP_MS)))
            .aggregate(CountBids(), BidderSession()))


QUERIES: dict[str, Callable[[DataStream], DataStream]] = {
    "q0": q0, "q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5, "q7": q7, "q8": q8,
    "q11": q11}
