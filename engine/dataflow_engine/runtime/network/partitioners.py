"""Flink's StreamPartitioners: the ChannelSelector of a RecordWriter.

Channels are the producer subtask's subpartitions: for ALL_TO_ALL exchanges every consumer
subtask, for POINTWISE ones (forward, rescale) the consumer range the ExecutionGraph gives this
producer. :meth:`StreamPartitioner.channel_selector` returns the per-record callable; the
classes keep Flink's exact routing (random start for rebalance, -1 start for rescale).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.runtime.state.key_groups import (
    KeyHash,
    assign_key_to_parallel_operator,
    java_hash_code,
)

ChannelSelector = Callable[[Any], int]
KeySelector = Callable[[Any], Any]

#: Keys whose channel is remembered per RecordWriter (keys repeat; hashing them is not free).
_KEY_CACHE_LIMIT = 1 << 16


class StreamPartitioner(ABC):
    is_broadcast = False
    #: Every record goes to channel 0 (the writer skips the per-record call).
    is_constant = False

    def __init__(self) -> None:
        self.number_of_channels = 0

    def setup(self, number_of_channels: int) -> None:
        self.number_of_channels = number_of_channels

    @abstractmethod
    def select_channel(self, record: Any) -> int: ...

    def channel_selector(self) -> ChannelSelector:
        return self.select_channel


class ForwardPartitioner(StreamPartitioner):
    """To the consumer subtask with the producer's index: its only channel."""

    is_constant = True

    def select_channel(self, record: Any) -> int:
        return 0


class GlobalPartitioner(StreamPartitioner):
    """Everything to consumer subtask 0."""

    is_constant = True

    def select_channel(self, record: Any) -> int:
        return 0


class RebalancePartitioner(StreamPartitioner):
    """Round robin over all channels, starting after a random one."""

    def __init__(self) -> None:
        super().__init__()
        self.next_channel_to_send_to = 0

    def setup(self, number_of_channels: int) -> None:
        super().setup(number_of_channels)
        self.next_channel_to_send_to = random.randrange(number_of_channels)

    def select_channel(self, record: Any) -> int:
        self.next_channel_to_send_to = (self.next_channel_to_send_to + 1) % self.number_of_channels
        return self.next_channel_to_send_to

    def channel_selector(self) -> ChannelSelector:
        n = self.number_of_channels
        channel = self.next_channel_to_send_to

        def select(record: Any) -> int:
            nonlocal channel
            channel += 1
            if channel == n:
                channel = 0
            return channel

        return select


class RescalePartitioner(StreamPartitioner):
    """Round robin from channel 0 over this producer's consumer range only (POINTWISE)."""

    def __init__(self) -> None:
        super().__init__()
        self.next_channel_to_send_to = -1

    def select_channel(self, record: Any) -> int:
        self.next_channel_to_send_to += 1
        if self.next_channel_to_send_to >= self.number_of_channels:
            self.next_channel_to_send_to = 0
        return self.next_channel_to_send_to

    def channel_selector(self) -> ChannelSelector:
        n = self.number_of_channels
        channel = self.next_channel_to_send_to

        def select(record: Any) -> int:
            nonlocal channel
            channel += 1
            if channel >= n:
                channel = 0
            return channel

        return select


class ShufflePartitioner(StreamPartitioner):
    """A uniformly random channel per record."""

    def __init__(self) -> None:
        super().__init__()
        self._random = random.Random()

    def select_channel(self, record: Any) -> int:
        return int(self._random.random() * self.number_of_channels)

    def channel_selector(self) -> ChannelSelector:
        rnd = self._random.random
        n = self.number_of_channels

        def select(record: Any) -> int:
            return int(rnd() * n)

        return select


class BroadcastPartitioner(StreamPartitioner):
    """Every record to every channel; the RecordWriter broadcasts instead of selecting."""

    is_broadcast = True

    def select_channel(self, record: Any) -> int:
        raise TypeError("Broadcast partitioner does not support select channels.")


class KeyGroupStreamPartitioner(StreamPartitioner):
    """keyBy: key -> key group in ``[0, maxParallelism)`` -> consumer operator index."""

    def __init__(self, key_selector: KeySelector, max_parallelism: int,
                 hash_key: KeyHash = java_hash_code) -> None:
        super().__init__()
        self.key_selector = key_selector
        self.max_parallelism = max_parallelism
        self.hash_key = hash_key

    def select_channel(self, record: Any) -> int:
        return assign_key_to_parallel_operator(
            self.key_selector(record), self.max_parallelism, self.number_of_channels,
            self.hash_key)

    def key_channel_selector(self) -> ChannelSelector:
        """Channel of a key (not a record), remembered per key."""
        return self.key_channels()[1]

    def key_channels(self) -> tuple[dict[Any, int], ChannelSelector]:
        """The channels of the keys seen so far, and the selector that finds a key's and
        remembers it: a hot loop looks a key up in the first (a dict's ``get``, no Python
        call) and calls the selector only for a key it has not seen."""
        max_parallelism, n, hash_key = self.max_parallelism, self.number_of_channels, self.hash_key
        cache: dict[Any, int] = {}
        get = cache.get

        def select(key: Any) -> int:
            channel = get(key)
            if channel is None:
                channel = assign_key_to_parallel_operator(key, max_parallelism, n, hash_key)
                if len(cache) < _KEY_CACHE_LIMIT:
                    cache[key] = channel
            return channel

        return cache, select


def create_partitioner(kind: PartitionerKind, key_selector: KeySelector | None,
                       max_parallelism: int, hash_key: KeyHash = java_hash_code
                       ) -> StreamPartitioner:
    if kind is PartitionerKind.HASH:
        assert key_selector is not None, "a HASH edge has a key selector"
        return KeyGroupStreamPartitioner(key_selector, max_parallelism, hash_key)
    simple: dict[PartitionerKind, Callable[[], StreamPartitioner]] = {
        PartitionerKind.FORWARD: ForwardPartitioner,
        PartitionerKind.GLOBAL: GlobalPartitioner,
        PartitionerKind.REBALANCE: RebalancePartitioner,
        PartitionerKind.RESCALE: RescalePartitioner,
        PartitionerKind.SHUFFLE: ShufflePartitioner,
        PartitionerKind.BROADCAST: BroadcastPartitioner,
    }
    return simple[kind]()
