"""Disposing of a savepoint (``POST /savepoints/dispose``): only a ``savepoint-*`` directory
directly under the job's savepoint directory is deleted, whatever spelling the caller uses;
a second disposal answers ``disposed=false``; the endpoint needs the job's token."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.rest import (
    SAVEPOINTS_DISPOSE_PATH,
    TOKEN_HEADER,
    SavepointDisposeRequest,
    parse_dispose_response,
)
from dataflow_engine.runtime.checkpoint.coordinator import CheckpointCoordinator
from dataflow_engine.runtime.checkpoint.filesystems import LOCAL
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequests
from dataflow_engine.runtime.checkpoint.storage import (
    CheckpointStorageError,
    SavepointDisposalRefused,
    dispose_savepoint,
)
from dataflow_engine.runtime.jobmaster.rest_server import StatusServer, savepoint_actions
from dataflow_engine.spec.model import CheckpointingSpec

pytestmark = pytest.mark.unit

NAME = "savepoint-7-0a1b2c"


def _savepoint(directory: Path, name: str = NAME) -> Path:
    path = directory / name
    (path / "pending").mkdir(parents=True)
    (path / "_metadata").write_bytes(b"state")
    (path / "pending" / "part-0").write_text("x")
    return path


def test_a_savepoint_is_deleted_once_and_a_second_disposal_is_no_error(tmp_path: Path) -> None:
    savepoints = tmp_path / "savepoints"
    kept = _savepoint(savepoints, "savepoint-8-ffffff")
    path = _savepoint(savepoints)
    assert dispose_savepoint(str(path), str(savepoints), LOCAL) is True
    assert not path.exists()
    assert dispose_savepoint(str(path), str(savepoints), LOCAL) is False
    assert (kept / "_metadata").is_file()  # its neighbour stays


@pytest.mark.parametrize("spelling", [
    "file://{path}", "file:{path}", "{path}/", "{directory}/./{name}",
    "{directory}/../savepoints/{name}"])
def test_other_spellings_of_the_same_savepoint_are_disposed_of(tmp_path: Path,
                                                               spelling: str) -> None:
    savepoints = tmp_path / "savepoints"
    path = _savepoint(savepoints)
    given = spelling.format(path=path, directory=savepoints, name=NAME)
    assert dispose_savepoint(given, str(savepoints), LOCAL) is True
    assert not path.exists()


@pytest.mark.parametrize("target", [
    "{storage}/chk-3",                           # a checkpoint, not a savepoint
    "{storage}",                                 # the checkpoint storage itself
    "{savepoints}",                              # the savepoint directory itself
    "{savepoints}/{name}/pending",               # inside a savepoint
    "{savepoints}/../{name}",                    # a savepoint's name, elsewhere
    "{savepoints}/{name}/../../chk-3",           # climbing out
    "{other}/{name}",                            # another job's savepoint
    "savepoints/{name}",                         # relative: the driver's working directory
    "hdfs://namenode:8020{savepoints}/{name}",   # another filesystem
    "{savepoints}/savepoint-x",                  # not a name savepoints get
])
def test_anything_but_a_savepoint_of_the_job_is_refused_and_left_alone(tmp_path: Path,
                                                                        target: str) -> None:
    storage, other = tmp_path / "storage", tmp_path / "other-job"
    savepoints = storage / "savepoints"
    for directory in (savepoints, other):
        _savepoint(directory)
    _savepoint(savepoints, "savepoint-x")
    (storage / "chk-3").mkdir()
    (storage / "chk-3" / "_metadata").write_bytes(b"state")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    given = target.format(storage=storage, savepoints=savepoints, other=other, name=NAME)
    with pytest.raises(SavepointDisposalRefused, match="is not a savepoint of this job"):
        dispose_savepoint(given, str(savepoints), LOCAL)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_a_file_or_a_link_named_like_a_savepoint_is_refused(tmp_path: Path) -> None:
    savepoints, elsewhere = tmp_path / "savepoints", tmp_path / "precious"
    elsewhere.mkdir()
    (elsewhere / "data").write_text("keep")
    savepoints.mkdir()
    (savepoints / NAME).write_text("not a directory")
    with pytest.raises(SavepointDisposalRefused, match="is a file"):
        dispose_savepoint(str(savepoints / NAME), str(savepoints), LOCAL)
    (savepoints / NAME).unlink()
    os.symlink(elsewhere, savepoints / NAME)
    with pytest.raises(SavepointDisposalRefused, match="symbolic link"):
        dispose_savepoint(str(savepoints / NAME), str(savepoints), LOCAL)
    assert (elsewhere / "data").read_text() == "keep"


def test_a_job_without_a_savepoint_directory_disposes_of_nothing(tmp_path: Path) -> None:
    path = _savepoint(tmp_path)
    with pytest.raises(SavepointDisposalRefused, match="no savepoint directory"):
        dispose_savepoint(str(path), None, LOCAL)
    assert path.is_dir()


class _FakeHadoop:
    """A Hadoop filesystem of URIs in memory, whose deletes can be made to fail."""

    def __init__(self, directories: set[str], deletes: bool = True) -> None:
        self.directories, self.deletes = directories, deletes
        self.removed: list[str] = []

    def names(self, directory: str) -> list[str]:
        return []

    def is_file(self, path: str) -> bool:
        return False

    def is_directory(self, path: str) -> bool:
        return path in self.directories

    def write_atomically(self, path: str, data: bytes) -> None:
        raise AssertionError("disposal writes nothing")

    def read(self, path: str) -> bytes:
        raise FileNotFoundError(path)

    def remove_tree(self, path: str) -> None:
        self.removed.append(path)
        if self.deletes:
            self.directories.discard(path)


def test_a_savepoint_on_a_hadoop_filesystem_is_matched_by_its_uri() -> None:
    directory = "hdfs://namenode:8020/checkpoints/savepoints"
    target = f"{directory}/{NAME}"
    filesystem = _FakeHadoop({target})
    for refused in (f"hdfs://other:8020/checkpoints/savepoints/{NAME}",
                    f"hdfs://namenode:8020/checkpoints/{NAME}",
                    f"/checkpoints/savepoints/{NAME}", f"{target}?recursive=true"):
        with pytest.raises(SavepointDisposalRefused):
            dispose_savepoint(refused, directory, filesystem)
    assert filesystem.removed == []
    assert dispose_savepoint(f"HDFS://namenode:8020/checkpoints/x/../savepoints/{NAME}/",
                             directory, filesystem) is True
    assert filesystem.removed == [target]  # the job's own spelling of it
    assert dispose_savepoint(target, directory, filesystem) is False


def test_a_deletion_that_leaves_the_savepoint_is_an_error() -> None:
    directory = "hdfs://namenode:8020/savepoints"
    filesystem = _FakeHadoop({f"{directory}/{NAME}"}, deletes=False)
    with pytest.raises(CheckpointStorageError, match="still there"):
        dispose_savepoint(f"{directory}/{NAME}", directory, filesystem)


def _post(url: str, body: dict[str, Any], token: str | None) -> tuple[int, Any]:
    headers = {TOKEN_HEADER: token} if token is not None else {}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_driver_disposes_of_its_run_savepoints_over_rest(tmp_path: Path) -> None:
    requests = SavepointRequests()
    server = StatusServer(0, "127.0.0.1", savepoint_actions(requests), token="s3cret")
    url = f"http://127.0.0.1:{server.port}{SAVEPOINTS_DISPOSE_PATH}"
    path = _savepoint(tmp_path / "savepoints")
    body = SavepointDisposeRequest(path=str(path)).to_json()
    coordinator: CheckpointCoordinator | None = None
    try:
        code, answer = _post(url, body, "s3cret")
        assert code == 409 and "once its run started" in answer["error"]  # no run yet

        coordinator = CheckpointCoordinator(CheckpointingSpec.model_validate(
            {"interval": "1h", "storage": str(tmp_path)}), {}, [], [], requests)
        for token in (None, "guess"):
            assert _post(url, body, token)[0] == 403
        assert path.is_dir()
        code, answer = _post(url, {"path": str(tmp_path)}, "s3cret")
        assert code == 400 and "is not a savepoint of this job" in answer["error"]
        assert _post(url, {"paths": []}, "s3cret")[0] == 400

        code, answer = _post(url, body, "s3cret")
        disposed = parse_dispose_response(answer)
        assert code == 200 and disposed is not None
        assert (disposed.path, disposed.disposed) == (str(path), True)
        assert not path.exists()
        code, answer = _post(url, body, "s3cret")
        assert code == 200 and answer["disposed"] is False
    finally:
        server.close()
        if coordinator is not None:
            coordinator.close()
