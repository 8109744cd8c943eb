"""Keyed state on the heap backend: PyFlink's state API, TTL, namespaces, rescaling snapshots."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from dataflow_engine.runtime.state.backend import HeapKeyedStateBackend, NamespacedKey
from dataflow_engine.runtime.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from dataflow_engine.runtime.state.key_groups import (
    assign_key_to_parallel_operator,
    assign_to_key_group,
    key_group_range,
)
from dataflow_engine.runtime.state.keyed_state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)

pytestmark = pytest.mark.unit
TTL = 10


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class Seconds:
    """Stands in for PyFlink's Time/Duration."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    def to_milliseconds(self) -> int:
        return self.seconds * 1000


class Average:
    """PyFlink-style AggregateFunction over (sum, count) accumulators."""

    def create_accumulator(self) -> tuple[int, int]:
        return 0, 0

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return a[0] + b[0], a[1] + b[1]


class Max:
    def reduce(self, a: int, b: int) -> int:
        return max(a, b)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def backend(clock: FakeClock) -> HeapKeyedStateBackend:
    return HeapKeyedStateBackend(128, clock)


def ttl_config(read: bool = False, return_expired: bool = False,
               full_snapshot: bool = False) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(TTL)
    builder = (builder.update_ttl_on_read_and_write() if read
               else builder.update_ttl_on_create_and_write())
    builder = (builder.return_expired_if_not_cleaned_up() if return_expired
               else builder.never_return_expired())
    if full_snapshot:
        builder = builder.cleanup_full_snapshot()
    return builder.build()


def with_ttl(descriptor: Any, config: StateTtlConfig) -> Any:
    descriptor.enable_time_to_live(config)
    return descriptor


# --- state API, no TTL -------------------------------------------------------------------------

def test_value_state_is_isolated_per_key(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_state(ValueStateDescriptor("count"))
    for key in ["a", "b", "a", "a", "b", "c"]:
        backend.set_current_key(key)
        state.update((state.value() or 0) + 1)
    seen = {}
    for key in ["a", "b", "c", "d"]:
        backend.set_current_key(key)
        seen[key] = state.value()
    assert seen == {"a": 3, "b": 2, "c": 1, "d": None}
    backend.set_current_key("a")
    state.clear()
    assert state.value() is None
    backend.set_current_key("b")
    assert state.value() == 2
    state.update(None)  # Flink: updating with null clears
    assert state.value() is None
    assert sorted(backend.keys("count")) == ["c"]


def test_list_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_list_state(ListStateDescriptor("items"))
    backend.set_current_key(1)
    assert state.get() == []
    assert list(state) == []
    state.add("x")
    state.add_all(["y", "z"])
    backend.set_current_key(2)
    state.add("other")
    backend.set_current_key(1)
    assert state.get() == ["x", "y", "z"]
    assert list(state) == ["x", "y", "z"]
    state.get().append("not stored")  # get() hands out a copy
    assert state.get() == ["x", "y", "z"]
    state.update(["u"])
    assert state.get() == ["u"]
    with pytest.raises(ValueError, match="None"):
        state.add(None)
    with pytest.raises(ValueError, match="None"):
        state.add_all(["ok", None])
    assert state.get() == ["u"]
    state.update([])
    assert state.get() == []
    assert list(backend.keys("items")) == [2]
    backend.set_current_key(2)
    assert state.get() == ["other"]
    state.clear()
    assert state.get() == []


def test_map_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_map_state(MapStateDescriptor("m"))
    backend.set_current_key("k")
    assert state.is_empty()
    assert state.get("a") is None
    assert not state.contains("a")
    assert (state.items(), state.keys(), state.values(), list(state)) == ([], [], [], [])
    state.put("a", 1)
    state.put_all({"b": 2, "c": 3})
    state["d"] = 4
    backend.set_current_key("other")
    state.put("a", 100)
    backend.set_current_key("k")
    assert state.get("a") == 1
    assert state["d"] == 4
    assert state.contains("b") and "c" in state and "z" not in state
    assert sorted(state.items()) == [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
    assert sorted(state.keys()) == sorted(state) == ["a", "b", "c", "d"]
    assert sorted(state.values()) == [1, 2, 3, 4]
    for key in state:  # removing while iterating is allowed
        if key != "a":
            state.remove(key)
    del state["missing"]
    assert state.items() == [("a", 1)]
    assert not state.is_empty()
    del state["a"]
    assert state.is_empty()
    assert list(backend.keys("m")) == ["other"]  # the emptied map is gone
    backend.set_current_key("other")
    assert state.items() == [("a", 100)]
    state.clear()
    assert state.is_empty()


def test_reducing_state_with_callable_and_reduce_function(
        backend: HeapKeyedStateBackend) -> None:
    total = backend.get_reducing_state(ReducingStateDescriptor("sum", lambda a, b: a + b))
    biggest = backend.get_reducing_state(ReducingStateDescriptor("max", Max()))
    for key, value in [("a", 3), ("b", 10), ("a", 7), ("a", 1), ("b", 2)]:
        backend.set_current_key(key)
        total.add(value)
        biggest.add(value)
    backend.set_current_key("a")
    assert (total.get(), biggest.get()) == (11, 7)
    backend.set_current_key("b")
    assert (total.get(), biggest.get()) == (12, 10)
    total.add(None)  # Flink: adding null clears
    assert total.get() is None
    backend.set_current_key("nobody")
    assert total.get() is None
    with pytest.raises(TypeError, match="reduce"):
        ReducingStateDescriptor("bad", 42)


def test_aggregating_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_aggregating_state(AggregatingStateDescriptor("avg", Average()))
    backend.set_current_key("a")
    assert state.get() is None
    state.add(2)
    backend.set_current_key("b")
    state.add(10)
    backend.set_current_key("a")
    state.add(4)
    assert state.get() == 3.0
    state.clear()
    assert state.get() is None
    backend.set_current_key("b")
    assert state.get() == 10.0
    with pytest.raises(TypeError, match="create_accumulator"):
        AggregatingStateDescriptor("bad", object())  # type: ignore[arg-type]


def test_get_state_dispatches_and_caches_by_name(backend: HeapKeyedStateBackend) -> None:
    value = backend.get_state(ValueStateDescriptor("v"))
    assert type(value) is ValueState
    assert isinstance(backend.get_state(ListStateDescriptor("l")), ListState)
    assert isinstance(backend.get_state(MapStateDescriptor("m")), MapState)
    assert isinstance(backend.get_state(ReducingStateDescriptor("r", max)), ReducingState)
    assert isinstance(backend.get_state(AggregatingStateDescriptor("a", Average())),
                      AggregatingState)
    assert backend.get_state(ValueStateDescriptor("v")) is value
    assert backend.get_list_state(ListStateDescriptor("l")) is backend.get_state(
        ListStateDescriptor("l"))
    with pytest.raises(ValueError, match="'v'"):
        backend.get_state(ListStateDescriptor("v"))
    with pytest.raises(ValueError, match="'l'"):
        backend.get_map_state(MapStateDescriptor("l"))
    with pytest.raises(TypeError, match="ListStateDescriptor"):
        backend.get_list_state(ValueStateDescriptor("v"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MapStateDescriptor"):
        backend.get_map_state(ListStateDescriptor("l"))  # type: ignore[arg-type]


def test_apply_to_all_keys(backend: HeapKeyedStateBackend) -> None:
    descriptor = ValueStateDescriptor("v")
    state = backend.get_state(descriptor)
    for key in range(5):
        backend.set_current_key(key)
        state.update(key * 10)
    backend.set_current_key("current")
    seen: dict[Any, Any] = {}

    def visit(key: Any, visited: Any) -> None:
        seen[key] = visited.value()
        if key % 2:
            visited.clear()

    backend.apply_to_all_keys(descriptor, visit)
    assert seen == {k: k * 10 for k in range(5)}
    assert sorted(backend.keys("v")) == [0, 2, 4]
    assert backend.current_key == "current"


# --- TTL ---------------------------------------------------------------------------------------

def test_ttl_config_builder() -> None:
    config = StateTtlConfig.new_builder(Seconds(3)).build()
    assert config.get_ttl() == 3000
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite
    assert config.get_state_visibility() is StateTtlConfig.StateVisibility.NeverReturnExpired
    assert (config.get_ttl_time_characteristic()
            is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)
    assert config.is_enabled() and not config.cleanup_full_snapshot
    config = (StateTtlConfig.new_builder(5)
              .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
              .set_state_visibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
              .set_ttl_time_characteristic(StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)
              .cleanup_full_snapshot().cleanup_incrementally(10, False)
              .disable_cleanup_in_background().build())
    assert config.get_ttl() == 5
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
    assert (config.get_state_visibility()
            is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)
    assert config.cleanup_full_snapshot and not config.cleanup_in_background
    disabled = (StateTtlConfig.new_builder(5)
                .set_update_type(StateTtlConfig.UpdateType.Disabled).build())
    assert not disabled.is_enabled()
    with pytest.raises(TypeError):
        StateTtlConfig.new_builder("5s")
    descriptor = ValueStateDescriptor("v", "INT")
    assert (descriptor.get_name(), descriptor.type_info, descriptor.ttl_config) == (
        "v", "INT", None)
    descriptor.enable_time_to_live(config)
    assert descriptor.ttl_config is config


def test_value_ttl_on_create_and_write_ignores_reads(backend: HeapKeyedStateBackend,
                                                     clock: FakeClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config()))
    backend.set_current_key("a")
    state.update("x")
    clock.now = 9
    assert state.value() == "x"
    clock.now = 10
    assert state.value() is None
    assert list(backend.keys("v")) == []  # removed when touched
    state.update("y")  # writes restamp
    clock.now = 19
    assert state.value() == "y"


def test_value_ttl_on_read_and_write_refreshes_on_read(backend: HeapKeyedStateBackend,
                                                       clock: FakeClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config(read=True)))
    backend.set_current_key("a")
    state.update("x")
    clock.now = 9
    assert state.value() == "x"
    clock.now = 18
    assert state.value() == "x"
    clock.now = 28
    assert state.value() is None


def test_ttl_is_per_key(backend: HeapKeyedStateBackend, clock: FakeClock) -> None:
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config()))
    backend.set_current_key("old")
    state.update(1)
    clock.now = 5
    backend.set_current_key("new")
    state.update(2)
    clock.now = 12
    assert state.value() == 2
    backend.set_current_key("old")
    assert state.value() is None


def test_return_expired_if_not_cleaned_up(backend: HeapKeyedStateBackend,
                                          clock: FakeClock) -> None:
    hidden = backend.get_state(with_ttl(ValueStateDescriptor("hidden"), ttl_config()))
    shown = backend.get_state(
        with_ttl(ValueStateDescriptor("shown"), ttl_config(return_expired=True)))
    backend.set_current_key("a")
    hidden.update("h")
    shown.update("s")
    clock.now = 50
    assert hidden.value() is None
    assert shown.value() == "s"  # expired, still there: returned, then cleaned up
    assert shown.value() is None


def test_map_ttl_expires_per_entry(backend: HeapKeyedStateBackend, clock: FakeClock) -> None:
    state = backend.get_map_state(with_ttl(MapStateDescriptor("m"), ttl_config()))
    backend.set_current_key("k")
    state.put("early", 1)
    clock.now = 5
    state.put_all({"late": 2, "later": 3})
    clock.now = 12
    assert state.get("early") is None
    assert not state.contains("early")
    assert state.get("late") == 2
    assert sorted(state.items()) == [("late", 2), ("later", 3)]
    assert sorted(state.keys()) == ["late", "later"]
    state.put("late", 20)  # restamped at 12
    clock.now = 15
    assert state.items() == [("late", 20)]
    assert not state.is_empty()
    clock.now = 22
    assert state.is_empty()
    assert list(backend.keys("m")) == []


def test_map_ttl_read_refresh_and_expired_visibility(backend: HeapKeyedStateBackend,
                                                      clock: FakeClock) -> None:
    state = backend.get_map_state(
        with_ttl(MapStateDescriptor("m"), ttl_config(read=True, return_expired=True)))
    backend.set_current_key("k")
    state.put("read", 1)
    state.put("unread", 2)
    clock.now = 8
    assert state.get("read") == 1
    clock.now = 12
    assert sorted(state.items()) == [("read", 1), ("unread", 2)]  # expired one shown once
    assert state.items() == [("read", 1)]  # and then cleaned; items() restamped "read" at 12
    clock.now = 21
    assert state.items() == [("read", 1)]
    assert state.items() == [("read", 1)]  # still live: not merely shown once expired


def test_list_ttl_expires_per_element(backend: HeapKeyedStateBackend, clock: FakeClock) -> None:
    state = backend.get_list_state(with_ttl(ListStateDescriptor("l"), ttl_config()))
    backend.set_current_key("k")
    state.add("x")
    clock.now = 5
    state.add_all(["y", "z"])
    clock.now = 12
    assert state.get() == ["y", "z"]
    assert list(state) == ["y", "z"]
    clock.now = 15
    assert state.get() == []
    assert list(backend.keys("l")) == []
    state.update(["fresh"])
    clock.now = 24
    assert state.get() == ["fresh"]
    state.update([])
    assert state.get() == []


def test_list_ttl_return_expired_and_read_refresh(backend: HeapKeyedStateBackend,
                                                   clock: FakeClock) -> None:
    shown = backend.get_list_state(
        with_ttl(ListStateDescriptor("shown"), ttl_config(return_expired=True)))
    refreshed = backend.get_list_state(
        with_ttl(ListStateDescriptor("refreshed"), ttl_config(read=True)))
    backend.set_current_key("k")
    shown.add("old")
    refreshed.add("r")
    clock.now = 5
    shown.add("new")
    assert refreshed.get() == ["r"]
    clock.now = 12
    assert shown.get() == ["old", "new"]
    assert shown.get() == ["new"]
    assert refreshed.get() == ["r"]
    clock.now = 30
    assert refreshed.get() == []


def test_reducing_and_aggregating_ttl_restart_after_expiry(backend: HeapKeyedStateBackend,
                                                           clock: FakeClock) -> None:
    total = backend.get_reducing_state(
        with_ttl(ReducingStateDescriptor("sum", lambda a, b: a + b), ttl_config()))
    avg = backend.get_aggregating_state(
        with_ttl(AggregatingStateDescriptor("avg", Average()), ttl_config()))
    backend.set_current_key("k")
    assert (total.get(), avg.get()) == (None, None)
    total.add(1)
    avg.add(1)
    clock.now = 5
    total.add(2)  # restamps at 5
    avg.add(3)
    clock.now = 14
    assert (total.get(), avg.get()) == (3, 2.0)
    clock.now = 15
    total.add(100)  # the old sum expired at 15: starts afresh
    avg.add(100)
    assert (total.get(), avg.get()) == (100, 100.0)
    clock.now = 25
    assert (total.get(), avg.get()) == (None, None)


def test_disabled_ttl_stores_plain_values(backend: HeapKeyedStateBackend,
                                          clock: FakeClock) -> None:
    config = StateTtlConfig.new_builder(TTL).set_update_type(
        StateTtlConfig.UpdateType.Disabled).build()
    state = backend.get_state(with_ttl(ValueStateDescriptor("v"), config))
    assert type(state) is ValueState
    backend.set_current_key("k")
    state.update("x")
    clock.now = 1000
    assert state.value() == "x"
    assert backend.snapshot() == {assign_to_key_group("k", 128): {"v": {"k": "x"}}}


def test_full_snapshot_cleanup_leaves_out_expired(backend: HeapKeyedStateBackend,
                                                  clock: FakeClock) -> None:
    kept = backend.get_state(with_ttl(ValueStateDescriptor("kept"), ttl_config()))
    cleaned = backend.get_state(
        with_ttl(ValueStateDescriptor("cleaned"), ttl_config(full_snapshot=True)))
    entries = backend.get_map_state(
        with_ttl(MapStateDescriptor("entries"), ttl_config(full_snapshot=True)))
    backend.set_current_key("k")
    kept.update("a")
    cleaned.update("b")
    entries.put("old", 1)
    clock.now = 5
    entries.put("new", 2)
    clock.now = 12
    group = assign_to_key_group("k", 128)
    assert backend.snapshot() == {group: {"kept": {"k": ("a", 0)},
                                          "entries": {"k": {"new": (2, 5)}}}}
    clock.now = 100
    assert backend.snapshot() == {group: {"kept": {"k": ("a", 0)}}}


# --- namespaces --------------------------------------------------------------------------------

def test_namespaces_are_isolated(backend: HeapKeyedStateBackend) -> None:
    value = backend.get_state(ValueStateDescriptor("v"))
    items = backend.get_list_state(ListStateDescriptor("l"))
    backend.set_current_key("k")
    value.update("default")
    items.add("d")
    for window in [(0, 10), (10, 20)]:
        backend.set_current_namespace(window)
        assert value.value() is None
        assert items.get() == []
        value.update(f"in {window}")
        items.add(window[0])
    backend.set_current_namespace((0, 10))
    assert (value.value(), items.get()) == ("in (0, 10)", [0])
    backend.set_current_key("other")
    assert value.value() is None
    value.update("other key")
    backend.set_current_key("k")
    items.clear()
    backend.set_current_namespace(None)
    assert (value.value(), items.get()) == ("default", ["d"])
    backend.set_current_namespace((10, 20))
    assert (value.value(), items.get()) == ("in (10, 20)", [10])
    assert sorted(backend.keys("v", (0, 10))) == ["k", "other"]
    assert list(backend.keys("v")) == ["k"]
    assert list(backend.keys("l", (0, 10))) == []


def test_namespaced_and_tuple_keys_do_not_collide_in_snapshots(
        clock: FakeClock) -> None:
    source = HeapKeyedStateBackend(128, clock)
    state = source.get_state(ValueStateDescriptor("v"))
    source.set_current_key(("a", 1))
    state.update("tuple key")
    source.set_current_key("a")
    source.set_current_namespace(1)
    state.update("namespaced")
    snapshot = pickle.loads(pickle.dumps(source.snapshot()))
    target = HeapKeyedStateBackend(128, clock)
    target.restore([snapshot], range(128))
    restored = target.get_state(ValueStateDescriptor("v"))
    target.set_current_key(("a", 1))
    assert restored.value() == "tuple key"
    target.set_current_key("a")
    assert restored.value() is None
    target.set_current_namespace(1)
    assert restored.value() == "namespaced"
    assert NamespacedKey("a", 1) in snapshot[assign_to_key_group("a", 128)]["v"]


# --- snapshots and rescaling -------------------------------------------------------------------

def keys_covering_all_groups(max_parallelism: int) -> list[str]:
    keys: list[str] = []
    groups: set[int] = set()
    i = 0
    while len(groups) < max_parallelism:
        key = f"key-{i}"
        keys.append(key)
        groups.add(assign_to_key_group(key, max_parallelism))
        i += 1
    return keys


def test_snapshot_restore_at_another_parallelism(clock: FakeClock) -> None:
    max_p = 128
    keys = keys_covering_all_groups(max_p)
    value_d, list_d, map_d = (ValueStateDescriptor("v"), ListStateDescriptor("l"),
                              MapStateDescriptor("m"))
    ttl_d = with_ttl(ValueStateDescriptor("ttl"), ttl_config())
    old = [HeapKeyedStateBackend(max_p, clock) for _ in range(2)]
    for key in keys:
        backend = old[assign_key_to_parallel_operator(key, max_p, 2)]
        backend.set_current_key(key)
        backend.get_state(value_d).update(f"v-{key}")
        backend.get_list_state(list_d).add_all([key, 1])
        backend.get_map_state(map_d).put("k", key)
        backend.get_state(ttl_d).update(key)
        backend.set_current_namespace("window")
        backend.get_state(value_d).update(f"w-{key}")
        backend.set_current_namespace(None)
    parts = [pickle.loads(pickle.dumps(backend.snapshot())) for backend in old]
    assert {group for part in parts for group in part} == set(range(max_p))

    ranges = [key_group_range(max_p, 3, i) for i in range(3)]
    assert [(r.start, r.stop) for r in ranges] == [(0, 43), (43, 86), (86, 128)]
    new = [HeapKeyedStateBackend(max_p, clock) for _ in range(3)]
    early = new[0].get_state(value_d)  # created before restore: still sees restored data
    for backend, owned in zip(new, ranges, strict=True):
        backend.restore(parts, owned)

    clock.now = 5
    for key in keys:
        group = assign_to_key_group(key, max_p)
        [owner] = [i for i, owned in enumerate(ranges) if group in owned]
        for i, backend in enumerate(new):
            backend.set_current_key(key)
            value = backend.get_state(value_d)
            if i != owner:
                assert value.value() is None
                continue
            assert value.value() == f"v-{key}"
            assert backend.get_list_state(list_d).get() == [key, 1]
            assert backend.get_map_state(map_d).items() == [("k", key)]
            assert backend.get_state(ttl_d).value() == key
            backend.set_current_namespace("window")
            assert value.value() == f"w-{key}"
            backend.set_current_namespace(None)
    assert early is new[0].get_state(value_d)
    assert sorted(k for backend in new for k in backend.keys("v")) == sorted(keys)
    assert sorted(k for backend in new for k in backend.keys("v", "window")) == sorted(keys)

    clock.now = TTL  # restored TTL stamps are the original ones (written at 0)
    for backend in new:
        for key in list(backend.keys("ttl")):
            backend.set_current_key(key)
            assert backend.get_state(ttl_d).value() is None


def test_snapshot_is_plain_data_and_detached(backend: HeapKeyedStateBackend) -> None:
    items = backend.get_list_state(ListStateDescriptor("l"))
    backend.set_current_key(7)
    items.add("a")
    snapshot = backend.snapshot()
    items.add("b")
    group = assign_to_key_group(7, 128)
    assert snapshot == {group: {"l": {7: ["a"]}}}
    assert type(snapshot[group]["l"][7]) is list
    assert pickle.loads(pickle.dumps(snapshot)) == snapshot


def test_restore_skips_groups_outside_the_range(clock: FakeClock) -> None:
    source = HeapKeyedStateBackend(128, clock)
    state = source.get_state(ValueStateDescriptor("v"))
    source.set_current_key("x")
    state.update(1)
    group = assign_to_key_group("x", 128)
    outside = range(0, group) if group else range(1, 128)
    target = HeapKeyedStateBackend(128, clock)
    target.restore([source.snapshot()], outside)
    assert list(target.keys("v")) == []
    target.restore([source.snapshot()], range(group, group + 1))
    assert list(target.keys("v")) == ["x"]


def test_max_parallelism_is_validated() -> None:
    with pytest.raises(ValueError, match="max_parallelism"):
        HeapKeyedStateBackend(0)
    with pytest.raises(ValueError, match="max_parallelism"):
        HeapKeyedStateBackend((1 << 15) + 1)
