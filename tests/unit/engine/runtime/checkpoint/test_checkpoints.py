"""Epoch snapshots and checkpoints without Spark: key-group redistribution, operator state of
each stateful operator, the checkpoint storage's atomicity and retention, restore planning,
source enumerators, two-phase file commits, and a StreamTask carried from epoch to epoch."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from graph_specs import union_consumer

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.runtime.checkpoint.committer import (
    CommitError,
    Committer,
    FileCommittable,
    hidden_part_files,
    kept_with,
)
from dataflow_engine.runtime.checkpoint.filesystems import LOCAL, LocalFileSystem
from dataflow_engine.runtime.checkpoint.restore import (
    StateMismatchError,
    VertexShape,
    plan_restores,
)
from dataflow_engine.runtime.checkpoint.snapshots import (
    OperatorSnapshot,
    RestoredState,
    SubtaskSnapshot,
    TaskRestore,
    redistribute,
)
from dataflow_engine.runtime.checkpoint.storage import (
    METADATA,
    CheckpointStorage,
    CheckpointStorageError,
    CompletedCheckpoint,
    VertexState,
    load_checkpoint,
    new_savepoint_directory,
    resolve_storage,
    store_savepoint,
)
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.state.broadcast_state import BroadcastStateStore
from dataflow_engine.runtime.state.key_groups import (
    assign_to_key_group,
    compute_operator_index_for_key_group,
    key_group_range,
)
from dataflow_engine.runtime.streamoperators.sources import (
    BoundedEnumerator,
    DatagenEnumerator,
    FileStreamEnumerator,
    datagen_value,
    read_text_segments,
)
from dataflow_engine.runtime.streamoperators.stream_operators import (
    DatagenSource,
    StreamGroupedReduce,
)
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.runtime.tasks.descriptors import EpochInput, OperatorConfig, PayloadKind
from dataflow_engine.runtime.tasks.outputs import CountingDiscardOutput
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.time.elements import Watermark
from dataflow_engine.runtime.time.watermark_generators import (
    BoundedOutOfOrdernessWatermarks,
    WatermarksWithIdleness,
)
from dataflow_engine.spec.model import OperatorType, RuntimeMode

pytestmark = pytest.mark.unit


# -- key groups ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("max_parallelism", "parallelism"), [(128, 3), (10, 10), (7, 2), (1, 1)])
def test_key_group_ranges_partition_the_groups_as_keys_are_routed(max_parallelism: int,
                                                                  parallelism: int) -> None:
    ranges = [key_group_range(max_parallelism, parallelism, i) for i in range(parallelism)]
    assert [g for r in ranges for g in r] == list(range(max_parallelism))
    for index, groups in enumerate(ranges):
        assert all(compute_operator_index_for_key_group(max_parallelism, parallelism, g) == index
                   for g in groups)


def _keyed(keys: list[str], max_parallelism: int = 128) -> OperatorSnapshot:
    groups: dict[int, dict[str, int]] = {}
    for key in keys:
        groups.setdefault(assign_to_key_group(key, max_parallelism), {})[key] = len(key)
    return OperatorSnapshot(groups, None, MIN_TIMESTAMP)


def test_redistribute_gives_each_new_subtask_exactly_its_key_groups() -> None:
    keys = [f"k{i}" for i in range(200)]
    old = [_keyed(keys[:120]), _keyed(keys[120:])]  # 2 old subtasks
    old = [OperatorSnapshot(o.keyed, f"op-{i}", 100 + i) for i, o in enumerate(old)]
    restores = redistribute({"w": old}, 3, 128)
    seen: dict[str, int] = {}
    for index, restore in enumerate(restores):
        state = restore.operators["w"]
        assert state.key_groups == key_group_range(128, 3, index)
        assert not state.same_parallelism and state.own is None
        assert state.operator == ("op-0", "op-1")  # union: every old subtask's part
        assert state.watermark == 100  # the least: nothing fires early
        for part in state.keyed:
            for group, entries in part.items():
                assert group in state.key_groups
                for key in entries:
                    assert key not in seen
                    seen[key] = index
    assert sorted(seen) == sorted(keys)


def test_restoring_its_own_snapshot_keeps_operator_state_and_watermark() -> None:
    snapshot = SubtaskSnapshot({"w": OperatorSnapshot({3: {"a": 1}}, "mine", 42)},
                               {1: ({0: 40}, frozenset(), 40)})
    restore = TaskRestore.own(SubtaskSnapshot.from_bytes(snapshot.to_bytes()), 1, 2, 128)
    state = restore.operators["w"]
    assert (state.own, state.watermark, state.keyed) == ("mine", 42, ({3: {"a": 1}},))
    assert state.key_groups == key_group_range(128, 2, 1)
    assert restore.inputs == {1: ({0: 40}, frozenset(), 40)}


# -- operators -----------------------------------------------------------------------------------

def _config(operator_type: OperatorType, **fields: Any) -> OperatorConfig:
    base: dict[str, Any] = {"node_id": 1, "name": "op", "operator_type": operator_type,
                            "display_name": "Op", "function": None, "args": {},
                            "parallelism": 1, "max_parallelism": 128, "chained_outputs": (),
                            "writer_outputs": ()}
    return OperatorConfig(**{**base, **fields})


def _task(index: int = 0, parallelism: int = 1, epoch: int | None = None) -> TaskInfo:
    return TaskInfo("job", "task", index, parallelism, 128, 0, epoch=epoch)


def _reduce(index: int = 0, parallelism: int = 1) -> StreamGroupedReduce:
    operator = StreamGroupedReduce(
        _config(OperatorType.REDUCE, function="operator:add", parallelism=parallelism),
        _task(index, parallelism), RuntimeMode.STREAMING, PayloadKind.RECORD)
    operator.setup(CountingDiscardOutput())
    return operator


def test_a_keyed_reduce_resumes_its_rolling_values_split_by_key_group() -> None:
    first = _reduce()
    first.open()
    for key, value in [("a", 1), ("b", 2), ("a", 3), ("c", 4)]:
        first.process_element((key, value))
    snapshot = pickle.loads(pickle.dumps(first.snapshot_state()))
    restored = redistribute({"op": [snapshot]}, 2, 128)
    totals: dict[str, Any] = {}
    for index, restore in enumerate(restored):
        operator = _reduce(index, 2)
        operator.initialize_state(restore.operators["op"])
        for key in operator.state:
            assert assign_to_key_group(key, 128) in key_group_range(128, 2, index)
        totals.update({key: entry[0] for key, entry in operator.state.items()})
    assert totals == {"a": 4, "b": 2, "c": 4}


def test_broadcast_state_is_copied_from_old_subtask_index_modulo_old_parallelism() -> None:
    from dataflow_engine.runtime.streamoperators.broadcast import restore_broadcast_state

    stores = []
    for index in range(3):
        store = BroadcastStateStore(["rules"])
        restore_broadcast_state(store, RestoredState(range(0), (), ({"rules": {"r": 0}},
                                                                    {"rules": {"r": 1}}),
                                                     index, False))
        stores.append(store.states["rules"]["r"])
    assert stores == [0, 1, 0]


def test_an_idleness_generator_is_snapshotted_without_its_clock() -> None:
    generator = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(5), 1000, lambda: 7)
    generator.generator.on_event(None, 50, None)  # type: ignore[arg-type]
    copy = pickle.loads(pickle.dumps(generator))
    assert not hasattr(copy, "clock")
    assert copy.last_event == 7 and copy.generator.max_timestamp == 50


# -- sources -------------------------------------------------------------------------------------

def test_datagen_subtasks_share_a_global_range_whatever_their_parallelism() -> None:
    for parallelism in (1, 2, 3):
        indices: list[int] = []
        for index in range(parallelism):
            source = DatagenSource(_config(OperatorType.DATAGEN, args={"seed": 9}),
                                   _task(index, parallelism))
            source.assign_split((5, 17))
            records = list(source.records())
            assert all(value == datagen_value(9, i) for i, value in records)
            indices += [i for i, _ in records]
        assert sorted(indices) == list(range(5, 17))
    assert datagen_value(9, 3) != datagen_value(10, 3)
    assert all(0 <= datagen_value(1, i) < 1 << 31 for i in range(1000))


def test_the_datagen_enumerator_paces_rows_and_stops_at_its_limit() -> None:
    enumerator = DatagenEnumerator(2, rows_per_second=100.0, number_of_rows=250)
    assert enumerator.next_splits(10.0) == ((0, 0), (0, 0))
    assert enumerator.next_splits(10.5) == ((0, 50), (0, 50))
    assert enumerator.next_splits(11.0) == ((50, 100),) * 2
    assert not enumerator.finished
    resumed = DatagenEnumerator(3, rows_per_second=100.0, number_of_rows=250)
    resumed.restore(enumerator.position())
    assert resumed.next_splits(500.0) == ((100, 100),) * 3  # paced from the restart
    assert resumed.next_splits(510.0) == ((100, 250),) * 3
    assert resumed.finished


def test_a_bounded_source_in_a_continuous_job_is_read_in_its_first_epoch() -> None:
    enumerator = BoundedEnumerator(((0, 5), (5, 10)))
    assert enumerator.next_splits(0.0) == ((0, 5), (5, 10)) and enumerator.finished
    assert enumerator.next_splits(1.0) == (None, None)
    again = BoundedEnumerator(((0, 5), (5, 10)))
    again.restore(enumerator.position())
    assert again.next_splits(2.0) == (None, None)


def test_a_monitored_text_source_reads_each_new_file_once_whole(tmp_path: Path) -> None:
    for name, text in (("a.txt", "1\n2\n3\n"), ("b.txt", "4\n"), (".c.txt", "hidden\n")):
        (tmp_path / name).write_text(text)
    enumerator = FileStreamEnumerator(2, str(tmp_path), interval=1.0)
    first = enumerator.next_splits(10.0)
    assert first == (((str(tmp_path / "a.txt"), 0, 6),), ((str(tmp_path / "b.txt"), 0, 2),))
    (tmp_path / "d.txt").write_text("5\n")
    assert enumerator.next_splits(10.5) == ((), ())  # not yet time to look again
    assert enumerator.next_splits(11.0) == (((str(tmp_path / "d.txt"), 0, 2),), ())
    assert enumerator.next_splits(12.0) == ((), ()) and not enumerator.finished
    resumed = FileStreamEnumerator(3, str(tmp_path), interval=1.0)
    resumed.restore(pickle.loads(pickle.dumps(enumerator.position())))
    (tmp_path / "e.txt").write_text("6\n")
    assert resumed.next_splits(0.0) == (((str(tmp_path / "e.txt"), 0, 2),), (), ())
    assert list(read_text_segments(first[0] + first[1])) == ["1", "2", "3", "4"]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        FileStreamEnumerator(1, str(tmp_path / "missing"), 1.0).next_splits(0.0)
    # A glob that matches nothing yet is an empty listing: its files may come later.
    later = FileStreamEnumerator(1, str(tmp_path / "in" / "*.csv"), 1.0)
    assert later.next_splits(0.0) == ((),)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "f.csv").write_text("7\n")
    assert later.next_splits(1.0) == (((str(tmp_path / "in" / "f.csv"), 0, 2),),)


def test_a_monitored_text_source_is_unbounded_and_makes_the_job_continuous() -> None:
    from dataflow_engine.errors import SpecError
    from dataflow_engine.spec.model import RuntimeMode

    def spec(mode: str, **args: Any) -> dict[str, Any]:
        return {"runtimeMode": mode, "pipeline": [
            {"name": "files", "type": "text", "args": {"path": "/in", **args}},
            {"name": "o", "type": "discard", "inputs": ["files"]}]}

    monitored = compile_job(parse_spec(spec("AUTOMATIC", monitorInterval="2s")), "files")
    assert monitored.job_graph.runtime_mode is RuntimeMode.STREAMING and monitored.continuous
    assert not compile_job(parse_spec(spec("STREAMING")), "files").continuous
    with pytest.raises(SpecError, match=r"runtimeMode.*'files' is unbounded"):
        parse_spec(spec("BATCH", monitorInterval="2s"))
    with pytest.raises(SpecError, match=r"pipeline\[0\]\.args\.monitorInterval"):
        parse_spec(spec("STREAMING", monitorInterval="soon"))


def test_kafka_partitions_are_owned_as_flinks_enumerator_assigns_them() -> None:
    from dataflow_engine.runtime.streamoperators.kafka import split_owner

    # "clicks".hashCode() is -1357714453 in Java; (that * 31) & 0x7FFFFFFF is 860524917.
    owners = [split_owner("clicks", partition, 4) for partition in range(6)]
    start = 860524917 % 4
    assert owners == [(start + p) % 4 for p in range(6)]


# -- storage -------------------------------------------------------------------------------------

def _checkpoint(checkpoint_id: int, vertices: dict[str, VertexState] | None = None,
                committables: tuple[FileCommittable, ...] = ()) -> CompletedCheckpoint:
    return CompletedCheckpoint(checkpoint_id, 1.0, {"gen": checkpoint_id * 10},
                               vertices or {}, committables)


def test_savepoints_have_directories_of_their_own_that_retention_never_touches(
        tmp_path: Path) -> None:
    storage = CheckpointStorage(str(tmp_path), retained=1)
    assert storage.highest_id() == 0
    saved = store_savepoint(
        _checkpoint(5), new_savepoint_directory(str(tmp_path / "savepoints"), 5), LOCAL)
    assert saved.path is not None and saved.path.startswith(str(tmp_path / "savepoints" /
                                                                "savepoint-5-"))
    (tmp_path / "chk-9").mkdir()  # incomplete, yet a new run numbers above it
    for checkpoint_id in (6, 10):
        storage.store(_checkpoint(checkpoint_id))
    assert load_checkpoint(saved.path, LOCAL).sources == {"gen": 50}
    assert storage.highest_id() == 10 and storage.latest() == _checkpoint(10)
    with pytest.raises(CheckpointStorageError, match="does not exist"):
        load_checkpoint(str(tmp_path / "savepoint-nowhere"), LOCAL)


def test_a_savepoint_keeps_its_own_pending_part_files(tmp_path: Path) -> None:
    """A restart removes the hidden part files no checkpoint published; an intermediate
    savepoint's copies outlive that, and publishing both gives one file."""
    sink = tmp_path / "out"
    sink.mkdir()
    pending = sink / ".part-0-3-ab.json.inprogress"
    pending.write_text("[1]\n")
    committable = FileCommittable(str(pending), str(sink / "part-0-3-ab.json"))
    (kept,) = kept_with([committable], str(tmp_path / "savepoint-3-x" / "pending"))
    assert isinstance(kept, FileCommittable) and kept.final == committable.final
    for path in hidden_part_files(str(sink)):
        os.remove(path)  # what a restarted driver does
    kept.commit()
    assert (sink / "part-0-3-ab.json").read_text() == "[1]\n"
    kept.commit()  # again, from the same savepoint: nothing changes
    assert sorted(p.name for p in sink.iterdir()) == ["part-0-3-ab.json"]
    assert Path(kept.pending).read_text() == "[1]\n"  # still the savepoint's own


def test_a_savepoints_part_file_is_published_from_another_volume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No hard link and no rename may cross volumes: the kept copy is copied next to its
    final name and renamed there, and each restore from the savepoint can do it again."""
    sink = tmp_path / "out"
    sink.mkdir()
    pending = sink / ".part-0-3-ab.json.inprogress"
    pending.write_text("[2]\n")

    def cross_device(source: str, target: str) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    (kept,) = kept_with([FileCommittable(str(pending), str(sink / "part-0-3-ab.json"))],
                        str(tmp_path / "savepoint-3-x" / "pending"))
    os.remove(pending)
    replace = os.replace

    def same_directory_only(source: str, target: str) -> None:
        assert os.path.dirname(source) == os.path.dirname(target), (source, target)
        replace(source, target)

    monkeypatch.setattr(os, "replace", same_directory_only)
    for _ in range(2):  # restored twice from the same savepoint, the output lost between
        kept.commit()
        assert sorted(p.name for p in sink.iterdir()) == ["part-0-3-ab.json"]
        assert (sink / "part-0-3-ab.json").read_text() == "[2]\n"
        os.remove(sink / "part-0-3-ab.json")


def test_savepoints_are_asked_for_over_http_and_refused_before_the_epochs_run() -> None:
    import argparse
    import urllib.error
    import urllib.request

    from dataflow_engine.runtime.checkpoint.savepoints import (
        MAX_PENDING,
        SavepointRequest,
        SavepointRequests,
    )
    from dataflow_engine.runtime.client.command import savepoint
    from dataflow_engine.runtime.jobmaster.rest_server import StatusServer, savepoint_action

    requests = SavepointRequests()
    server = StatusServer(0, "127.0.0.1",
                          {"/savepoints": lambda body: savepoint_action(requests, body)})
    url = f"http://127.0.0.1:{server.port}"
    try:
        refused = argparse.Namespace(url=url, stop=False, nonce="early")
        assert savepoint(refused) == 1  # 409: not running epochs yet
        requests.accepting = True
        assert savepoint(argparse.Namespace(url=url, stop=True, nonce="n-1")) == 0
        assert requests.take() == [SavepointRequest("n-1", stop=True)]
        assert requests.take() == []
        bad = urllib.request.Request(f"{url}/savepoints", data=b'{"stop": "yes"}')
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(bad, timeout=5)
        assert error.value.code == 400
        negative = urllib.request.Request(f"{url}/savepoints", data=b"{}",
                                          headers={"Content-Length": "-1"})
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(negative, timeout=5)
        assert error.value.code == 400
        for index in range(MAX_PENDING):
            requests.request(SavepointRequest(f"queued-{index}"))
        assert savepoint(argparse.Namespace(url=url, stop=False, nonce="one-too-many")) == 1
        assert len(requests.take()) == MAX_PENDING
    finally:
        server.close()


def test_a_status_token_guards_the_post_actions_but_not_the_status(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse
    import urllib.error
    import urllib.request

    from dataflow_engine.rest.endpoints import TOKEN_ENV, TOKEN_HEADER
    from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequests
    from dataflow_engine.runtime.client.command import savepoint
    from dataflow_engine.runtime.jobmaster.rest_server import StatusServer, savepoint_action

    requests = SavepointRequests()
    requests.accepting = True
    server = StatusServer(0, "127.0.0.1",
                          {"/savepoints": lambda body: savepoint_action(requests, body)},
                          token="s3cret")
    url = f"http://127.0.0.1:{server.port}"
    try:
        with urllib.request.urlopen(f"{url}/status", timeout=5) as answer:
            assert answer.status == 200
        for header in ({}, {TOKEN_HEADER: "guess"}):
            post = urllib.request.Request(f"{url}/savepoints", data=b'{"nonce": "x"}',
                                          headers=header)
            with pytest.raises(urllib.error.HTTPError) as error:
                urllib.request.urlopen(post, timeout=5)
            assert error.value.code == 403
        assert requests.take() == []
        monkeypatch.setenv(TOKEN_ENV, "s3cret")
        assert savepoint(argparse.Namespace(url=url, stop=False, nonce="allowed")) == 0
        assert [r.nonce for r in requests.take()] == ["allowed"]
    finally:
        server.close()


def test_storage_keeps_the_newest_retained_complete_checkpoints(tmp_path: Path) -> None:
    filesystem, directory = resolve_storage(f"file://{tmp_path}", "storage")
    assert isinstance(filesystem, LocalFileSystem) and directory == str(tmp_path)
    storage = CheckpointStorage(directory, retained=2)
    (tmp_path / "chk-2").mkdir(parents=True)  # a checkpoint that failed half-way
    for checkpoint_id in (1, 3, 4):
        stored = storage.store(_checkpoint(checkpoint_id))
        assert stored.path == str(tmp_path / f"chk-{checkpoint_id}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chk-3", "chk-4"]
    latest = CheckpointStorage(str(tmp_path)).latest()
    assert latest is not None and (latest.checkpoint_id, latest.sources) == (4, {"gen": 40})
    (tmp_path / "chk-5").mkdir()  # incomplete: never restored from
    assert CheckpointStorage(str(tmp_path)).latest() == latest


class _UnlistableFileSystem(LocalFileSystem):
    """Takes writes but cannot list: the storage broke right after a checkpoint's write."""

    def names(self, directory: str) -> list[str]:
        raise NotADirectoryError(directory)


def test_a_written_checkpoint_is_complete_even_when_older_ones_cannot_be_removed(
        tmp_path: Path) -> None:
    stored = CheckpointStorage(str(tmp_path), filesystem=_UnlistableFileSystem()).store(
        _checkpoint(7))
    assert stored.path == str(tmp_path / "chk-7")
    assert CheckpointStorage(str(tmp_path)).latest() == stored


def test_a_checkpoint_is_atomic_and_a_bad_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "chk-1").mkdir()
    with pytest.raises(CheckpointStorageError, match="not a completed checkpoint"):
        load_checkpoint(str(tmp_path / "chk-1"), LOCAL)
    (tmp_path / "chk-1" / METADATA).write_bytes(b"garbage")
    with pytest.raises(CheckpointStorageError, match="cannot be read"):
        load_checkpoint(str(tmp_path / "chk-1"), LOCAL)
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(CheckpointStorageError, match="could not be written"):
        CheckpointStorage(str(blocked)).store(_checkpoint(1))
    memory = CheckpointStorage(None)
    assert memory.latest() is None
    assert memory.store(_checkpoint(2)).path is None and memory.latest() == _checkpoint(2)


# -- restore planning ----------------------------------------------------------------------------

def _vertex(parallelism: int, uids: tuple[str, ...], *keys: list[str],
            max_parallelism: int = 128) -> VertexState:
    subtasks = tuple(SubtaskSnapshot({uid: _keyed(k, max_parallelism) for uid in uids})
                     .to_bytes() for k in keys)
    return VertexState(parallelism, max_parallelism, uids, subtasks)


def test_an_unchanged_subtask_gets_its_own_state_but_not_its_input_watermarks() -> None:
    old = [SubtaskSnapshot({"w": OperatorSnapshot(_keyed([key]).keyed, f"own-{i}", 30 + i)},
                           {1: ({0: 50, 1: 60}, frozenset(), 50)}, ended=True)
           for i, key in enumerate(["a", "b"])]
    vertex = VertexState(2, 128, ("w",), tuple(o.to_bytes() for o in old))
    restores = plan_restores(_checkpoint(1, {"v1": vertex}), [VertexShape("v1", 2, 128, ("w",))])
    for index, data in enumerate(restores["v1"]):
        restore = pickle.loads(data)
        assert isinstance(restore, TaskRestore) and restore.ended
        state = restore.operators["w"]
        assert (state.own, state.watermark) == (f"own-{index}", 30 + index)
        # Channel numbers may mean other producers now: input watermarks start again.
        assert restore.inputs == {}


def test_a_rechained_and_rescaled_plan_gets_state_by_uid() -> None:
    keys = [f"k{i}" for i in range(50)]
    checkpoint = _checkpoint(1, {"old": _vertex(2, ("src", "w"), keys[:25], keys[25:])})
    restores = plan_restores(checkpoint, [VertexShape("new-src", 2, 128, ("src",)),
                                          VertexShape("new-w", 3, 128, ("w",))])
    restored = [pickle.loads(data) for data in restores["new-w"]]
    assert all(isinstance(r, TaskRestore) and set(r.operators) == {"w"} for r in restored)
    keys_back = sorted(key for r in restored for part in r.operators["w"].keyed
                       for entries in part.values() for key in entries)
    assert keys_back == sorted(keys)


def test_state_of_a_removed_operator_is_refused_unless_allowed() -> None:
    checkpoint = _checkpoint(1, {"old": _vertex(1, ("gone",), ["a"])})
    with pytest.raises(StateMismatchError, match=r"'gone'.*no longer"):
        plan_restores(checkpoint, [VertexShape("other", 1, 128, ("kept",))])
    assert plan_restores(checkpoint, [VertexShape("other", 1, 128, ("kept",))],
                         allow_non_restored_state=True)["other"]


def test_max_parallelism_cannot_change_under_keyed_state() -> None:
    checkpoint = _checkpoint(1, {"v": _vertex(1, ("w",), ["a"], max_parallelism=64)})
    with pytest.raises(StateMismatchError, match=r"maxParallelism 128.*64"):
        plan_restores(checkpoint, [VertexShape("v", 1, 128, ("w",))])


# -- commits -------------------------------------------------------------------------------------

def test_file_commits_are_idempotent_and_a_lost_part_is_an_error(tmp_path: Path) -> None:
    pending = tmp_path / ".part-00000-00000003-0123456789ab.0.0123456789ab77.inprogress"
    pending.write_text("1\n")
    later = tmp_path / ".part-00001-00000004-aaaaaaaaaaaa.1.aaaaaaaaaaaa.inprogress"
    later.write_text("2\n")
    committable = FileCommittable(str(pending), str(tmp_path / "part-00000-00000003-0123"))
    assert hidden_part_files(str(tmp_path)) == [str(pending), str(later)]
    assert hidden_part_files(str(tmp_path), up_to_epoch=3) == [str(pending)]
    Committer().commit(3, [committable, committable])  # the second: already published
    assert (tmp_path / "part-00000-00000003-0123").read_text() == "1\n"
    assert hidden_part_files(str(tmp_path)) == [str(later)]
    with pytest.raises(CommitError, match="gone before its commit"):
        FileCommittable(str(tmp_path / ".missing"), str(tmp_path / "part-missing")).commit()


# -- a StreamTask from epoch to epoch ------------------------------------------------------------

def _run_epoch(descriptor: Any, epoch: EpochInput, elements: list[Any]) -> tuple[list[Any], Any]:
    task = StreamTask(descriptor, 0, 0, epoch=epoch)
    frames = list(task.invoke([elements]))  # one decoded batch
    records = [record for batch in frames[1::2] for record in pickle.loads(batch)]
    return records, task


def test_input_watermarks_carry_over_from_one_epoch_to_the_next() -> None:
    descriptor = union_consumer()
    first, task = _run_epoch(descriptor, EpochInput(1, ()), [
        (10, ("a", ["a", 10])), Watermark(10, 0), Watermark(20, 1)])
    assert first == [("a", 10, MIN_TIMESTAMP)]
    assert task.snapshot is not None and task.committables == ()
    # Channel 1 stays at 20: channel 0's 30 lifts the watermark to 20, not to 30 (a fresh
    # valve would still be at MIN), and no end-of-input watermark was emitted.
    second, task = _run_epoch(descriptor, EpochInput(2, (task.snapshot,)), [
        Watermark(30, 0), (31, ("b", ["b", 31]))])
    assert second == [("b", 31, 20)]
    last, _ = _run_epoch(descriptor, EpochInput(3, (task.snapshot,), end_of_input=True),
                         [(40, ("a", ["a", 40]))])
    assert last == [("a", 40, 20)]


def test_a_file_sink_hands_over_one_part_per_epoch_with_records(tmp_path: Path) -> None:
    from dataflow_engine.runtime.streamoperators.stream_operators import FileSinkOperator

    def epoch(number: int, records: list[str]) -> tuple[FileCommittable, ...]:
        sink = FileSinkOperator(_config(OperatorType.FILE, args={"path": str(tmp_path)}),
                                _task(epoch=number))
        sink.setup(CountingDiscardOutput())
        sink.open()
        for record in records:
            sink.process_element(record)
        sink.prepare_snapshot_pre_barrier()
        sink.close()
        return sink.committables()

    assert epoch(4, []) == ()
    (committable,) = epoch(5, ["x", "y"])
    assert os.path.basename(committable.final).startswith("part-00000-00000005-")
    assert not os.path.exists(committable.final)  # published only by the driver's commit
    committable.commit()
    assert Path(committable.final).read_text() == "x\ny\n"
    assert hidden_part_files(str(tmp_path)) == []
    # The same subtask and epoch again (a driver that restarted without a checkpoint) never
    # replaces a published part.
    (again,) = epoch(5, ["z"])
    assert again.final != committable.final


def test_a_vertex_whose_sources_ended_hands_on_its_final_watermark_every_epoch() -> None:
    descriptor = union_consumer()
    _, task = _run_epoch(descriptor, EpochInput(1, ()), [
        (10, ("a", ["a", 10])), Watermark(10, 0), Watermark(20, 1)])
    _, task = _run_epoch(descriptor, EpochInput(2, (task.snapshot,), end_of_input=True),
                         [(40, ("a", ["a", 40]))])
    assert SubtaskSnapshot.from_bytes(task.snapshot).ended
    frames, task = _run_epoch(descriptor, EpochInput(3, (task.snapshot,), end_of_input=True),
                              [])
    assert frames == []  # nothing is processed or finished twice
    assert SubtaskSnapshot.from_bytes(task.snapshot).ended


def test_a_finished_source_tells_its_consumers_so_in_every_later_epoch() -> None:
    spec = parse_spec({"runtimeMode": "STREAMING", "pipeline": [
        {"name": "rules", "type": "collection", "args": {"elements": [["r", 4]]}},
        {"name": "stamp", "type": "timestamps", "inputs": ["rules"],
         "watermarkStrategy": {"type": "forMonotonousTimestamps", "timestampField": 1}},
        {"name": "out", "type": "print", "inputs": [{"from": "stamp",
                                                      "partitioning": "rebalance"}],
         "parallelism": 2}]})
    source = next(iter(plan_job(compile_job(spec, "rules")).vertices.values())).descriptor
    first = StreamTask(source, 0, 0, epoch=EpochInput(1, (), {source.operators[0].node_id: (
        (("r", 4),),)}, end_of_input=True))
    assert Watermark(MAX_TIMESTAMP, 0) in _elements(list(first.invoke([])))
    later = StreamTask(source, 0, 0, epoch=EpochInput(2, (first.snapshot,)))
    assert _elements(list(later.invoke([]))) == [Watermark(MAX_TIMESTAMP, 0)] * 2


def _elements(frames: list[bytes]) -> list[Any]:
    return [element for batch in frames[1::2] for element in pickle.loads(batch)]


def test_a_changed_watermark_strategy_starts_a_new_generator() -> None:
    from dataflow_engine.runtime.streamoperators.timestamps import TimestampsAndWatermarksOperator

    def operator(delay: str) -> TimestampsAndWatermarksOperator:
        strategy = {"type": "forBoundedOutOfOrderness", "maxOutOfOrderness": delay,
                    "timestampField": 1}
        op = TimestampsAndWatermarksOperator(
            _config(OperatorType.TIMESTAMPS, args={"watermarkStrategy": strategy}), _task())
        op.setup(CountingDiscardOutput())
        return op

    old = operator("1s")
    assert isinstance(old.generator, BoundedOutOfOrdernessWatermarks)
    old.generator.max_timestamp = 5000
    snapshot = pickle.loads(pickle.dumps(old.snapshot_state()))

    def restored(delay: str) -> Any:
        op = operator(delay)
        op.initialize_state(RestoredState(range(128), (), (snapshot.operator,), 0, True))
        return op.generator

    assert restored("1s").max_timestamp == 5000
    assert restored("30s").max_timestamp < 0  # a fresh generator for the new bound


def test_datagen_takes_only_the_documented_argument_names() -> None:
    from dataflow_engine.errors import SpecError

    with pytest.raises(SpecError, match="number_of_rows"):
        parse_spec({"pipeline": [
            {"name": "g", "type": "datagen", "args": {"number_of_rows": 10}},
            {"name": "o", "type": "discard", "inputs": ["g"]}]})


@pytest.mark.parametrize(("checkpointing", "rows", "refused"), [
    (None, None, True),
    ({"interval": "1s"}, None, True),
    ({"interval": "1s"}, 10, True),
    ({"interval": "1s", "storage": "/tmp/chk"}, None, False),
    (None, 10, False),
])
def test_a_continuous_jobs_file_sink_needs_durable_checkpoints(
        checkpointing: dict[str, Any] | None, rows: int | None, refused: bool) -> None:
    from dataflow_engine.errors import SpecError

    args: dict[str, Any] = {} if rows is None else {"numberOfRows": rows}
    spec: dict[str, Any] = {"runtimeMode": "STREAMING", "pipeline": [
        {"name": "g", "type": "datagen", "args": args},
        {"name": "o", "type": "file", "inputs": ["g"], "args": {"path": "/tmp/out"}}]}
    if checkpointing is not None:
        spec["checkpointing"] = checkpointing
    if refused:
        with pytest.raises(SpecError, match=r"pipeline\[1\].*checkpointing.storage"):
            parse_spec(spec)
    else:
        parse_spec(spec)


def _kafka_sink_spec(mode: str, source: dict[str, Any], sinks: list[dict[str, Any]],
                     checkpointing: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeMode": mode, "pipeline": [
        {"name": "in", **source},
        *({"name": f"out{i}", "type": "kafka_sink", "inputs": ["in"], "args": {
            "bootstrapServers": "k:9092", "topic": "t", **args}} for i, args in enumerate(sinks))]}
    if checkpointing is not None:
        spec["checkpointing"] = checkpointing
    return spec


_EXACTLY_ONCE = {"deliveryGuarantee": "exactly-once", "transactionalIdPrefix": "p"}
_UNBOUNDED = {"type": "datagen", "args": {}}
_DURABLE = {"interval": "1s", "storage": "/tmp/chk"}


@pytest.mark.parametrize(("mode", "source", "sinks", "checkpointing", "refusal"), [
    ("STREAMING", _UNBOUNDED, [_EXACTLY_ONCE], _DURABLE, None),
    ("STREAMING", _UNBOUNDED, [{"deliveryGuarantee": "at-least-once"}], None, None),
    ("STREAMING", _UNBOUNDED, [{"deliveryGuarantee": "exactly-once"}], _DURABLE,
     r"pipeline\[1\]\.args.*exactly-once needs a transactionalIdPrefix"),
    ("STREAMING", _UNBOUNDED, [_EXACTLY_ONCE], {"interval": "1s"},
     r"pipeline\[1\]\.args\.deliveryGuarantee.*set spec\.checkpointing\.storage"),
    ("BATCH", {"type": "sequence", "args": {"from": 1, "to": 3}}, [_EXACTLY_ONCE], _DURABLE,
     r"pipeline\[1\]\.args\.deliveryGuarantee.*only a continuous job takes"),
    ("STREAMING", _UNBOUNDED, [_EXACTLY_ONCE, _EXACTLY_ONCE], _DURABLE,
     r"pipeline\[2\]\.args\.transactionalIdPrefix.*'out0' and 'out1' share"),
    ("STREAMING", _UNBOUNDED, [{"deliveryGuarantee": "twice"}], None,
     r"pipeline\[1\]\.args\.deliveryGuarantee"),
])
def test_an_exactly_once_kafka_sink_needs_a_prefix_and_durable_checkpoints(
        mode: str, source: dict[str, Any], sinks: list[dict[str, Any]],
        checkpointing: dict[str, Any] | None, refusal: str | None) -> None:
    from dataflow_engine.errors import SpecError

    spec = _kafka_sink_spec(mode, source, sinks, checkpointing)
    if refusal is None:
        parse_spec(spec)
    else:
        with pytest.raises(SpecError, match=refusal):
            parse_spec(spec)


@pytest.mark.parametrize(("checkpointing", "refusal"), [
    ({"interval": "1s", "storage": "hdfs://namenode:8020/chk"},
     r"spec\.checkpointing\.savepointStorage.*file sink 'out' keeps its pending part files"),
    ({"interval": "1s", "storage": "hdfs://namenode:8020/chk", "savepointStorage": "/sp"}, None),
    ({"interval": "1s", "storage": "/chk", "savepointStorage": "s3a://bucket/sp"},
     r"spec\.checkpointing\.savepointStorage"),
    ({"interval": "1s", "storage": "file:///chk"}, None),
    ({"interval": "1s", "storage": "hdfs:/no-authority"}, r"spec\.checkpointing\.storage"),
])
def test_a_file_sink_keeps_savepoints_on_a_path_while_checkpoints_may_be_a_uri(
        checkpointing: dict[str, Any], refusal: str | None) -> None:
    from dataflow_engine.errors import SpecError

    spec = {"runtimeMode": "STREAMING", "checkpointing": checkpointing, "pipeline": [
        {"name": "gen", **_UNBOUNDED},
        {"name": "out", "type": "file", "args": {"path": "/out"}, "inputs": ["gen"]}]}
    if refusal is None:
        parse_spec(spec)
    else:
        with pytest.raises(SpecError, match=refusal):
            parse_spec(spec)
    if refusal is not None and "savepointStorage" not in refusal:
        return
    # A bounded job's file sink writes its files once, at its end: nothing to keep. (In
    # STREAMING mode: a BATCH job takes no checkpoints at all.)
    bounded = {**spec, "pipeline": [
        {"name": "gen", "type": "sequence", "args": {"from": 1, "to": 3}},
        {"name": "out", "type": "file", "args": {"path": "/out"}, "inputs": ["gen"]}]}
    parse_spec(bounded)


def test_local_storage_settings_resolve_to_directories(tmp_path: Path) -> None:
    for setting in (f"file:{tmp_path}/", f"file://{tmp_path}", str(tmp_path / "a" / "..")):
        filesystem, directory = resolve_storage(setting, "spec.checkpointing.storage")
        assert isinstance(filesystem, LocalFileSystem) and directory == str(tmp_path)
    LOCAL.write_atomically(str(tmp_path / "d" / "f"), b"data")
    assert LOCAL.read(str(tmp_path / "d" / "f")) == b"data"
    assert LOCAL.names(str(tmp_path / "d")) == ["f"]  # no temporary file left
    with pytest.raises(FileNotFoundError):
        LOCAL.read(str(tmp_path / "d" / "missing"))


class _Message:
    def __init__(self, partition: int, offset: int, timestamp: int) -> None:
        self._partition, self._offset, self._timestamp = partition, offset, timestamp

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return 1, self._timestamp

    def key(self) -> None:
        return None

    def value(self) -> bytes:
        return f"{self._partition}@{self._timestamp}".encode()


class _Position:
    def __init__(self, partition: int, offset: int) -> None:
        self.topic, self.partition, self.offset = "t", partition, offset


class _SkewedConsumer:
    """Delivers partition 0's whole range before partition 1's, as a fetch may."""

    def __init__(self) -> None:
        self.batches = [[_Message(0, o, 1000 * o) for o in range(4)],
                        [_Message(1, o, 1000 * o + 500) for o in range(4)]]
        self.read = {0: 0, 1: 0}

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        batch = self.batches.pop(0) if self.batches else []
        for message in batch:
            self.read[message.partition()] = message.offset() + 1
        return batch

    def position(self, partitions: list[Any]) -> list[_Position]:
        return [_Position(tp.partition, self.read[tp.partition]) for tp in partitions]


def test_a_kafka_subtask_merges_its_partitions_by_timestamp() -> None:
    from dataflow_engine.runtime.streamoperators.kafka import KafkaSource

    source = KafkaSource(_config(OperatorType.KAFKA, args={
        "bootstrapServers": "unused:9092", "topics": ["t"]}), _task(epoch=1))
    source.setup(CountingDiscardOutput())
    source.open()
    records = list(source._read(_SkewedConsumer(), {("t", 0): 4, ("t", 1): 4}))
    assert records == ["0@0", "1@500", "0@1000", "1@1500", "0@2000", "1@2500", "0@3000",
                       "1@3500"]
