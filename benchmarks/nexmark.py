"""Nexmark's events and queries q0, q1, q2, q5 and q8 as DataStream programs, one text for two
engines: it imports PyFlink where PyFlink is installed and this engine's API otherwise (the
same program, as docs/pyflink.md promises), so bench_nexmark.py runs the very same query code
on both.

The generator keeps Nexmark's proportions (of every 50 events: 1 person, 3 auctions, 46 bids;
bids mostly on recent "hot" auctions, auctions sold by recent people) and its event time (one
event per millisecond), with a cheap multiplicative hash instead of a random generator so that
event ``i`` is the same on every engine and every subtask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

try:
    from pyflink.common import Time, WatermarkStrategy
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import DataStream
    from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
    from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows
    ENGINE = "pyflink"
except ImportError:
    from dataflow_engine.api.common import Time, WatermarkStrategy
    from dataflow_engine.api.common.watermark_strategy import TimestampAssigner
    from dataflow_engine.api.datastream import DataStream
    from dataflow_engine.api.datastream.functions import AggregateFunction, ProcessWindowFunction
    from dataflow_engine.api.datastream.window import (
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


QUERIES: dict[str, Callable[[DataStream], DataStream]] = {
    "q0": q0, "q1": q1, "q2": q2, "q5": q5, "q8": q8}
