"""The local backend: its bound on running drivers, and the user its drivers run as."""

from __future__ import annotations

import base64
import json
import os
import pwd
import random
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.backends.base import DriverPhase, DriverQueued
from dataflow_operator.backends.local import (
    HOME,
    LOG,
    RECORD,
    STATUS_FILE,
    DriverLaunch,
    DriverProcess,
    DriverUser,
    DriverUserError,
    LocalBackend,
    Spawn,
    _blocked,
    resolve_driver_user,
    spawn_driver,
)
from dataflow_operator.backends.status_tokens import KEY_FILE, StatusTokens
from dataflow_operator.plan import JOB_FILE_KEY, JobPlan, build_plan
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.settings import OperatorSettings, default_state_dir

pytestmark = pytest.mark.unit

SPEC = DataflowJobSpec.model_validate({"pipeline": [
    {"name": "src", "type": "sequence", "args": {"from": 1, "to": 3}},
    {"name": "out", "type": "discard", "inputs": ["src"]}]})
#: Above the kernel's largest pid (2**22): a fake driver's pid is no process's.
NO_SUCH_PID = 1 << 23
ROOT = os.geteuid() == 0


class FakeKube:
    """The API calls provision makes: the plan ConfigMap is created, nothing else is read."""

    def create_or_adopt(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return None


class FakeProcess:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code


class FakeDrivers:
    """The backend's spawn: fake driver processes that run until the test ends them, and the
    most that ever ran at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.launches: list[DriverLaunch] = []
        self.running: list[FakeProcess] = []
        self.peak = 0

    def __call__(self, launch: DriverLaunch) -> DriverProcess:
        time.sleep(0.002)  # a fork and exec: the window a check-then-start race needs
        with self.lock:
            process = FakeProcess(NO_SUCH_PID + len(self.launches))
            self.launches.append(launch)
            self.running.append(process)
            self.peak = max(self.peak, len(self.running))
        return process

    def live(self) -> int:
        with self.lock:
            return len(self.running)

    def end_one(self, code: int = 0) -> None:
        with self.lock:
            if self.running:
                self.running.pop(0).code = code


@pytest.fixture(scope="session")
def driver_user() -> str:
    """The default driver user, which must exist when the tests run as root: created then
    (a system user without a home, as docs/security.md says) if it is missing."""
    name = OperatorSettings.local_driver_user
    if ROOT:
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", name], check=True)
    return name


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may enter (tmp_path's parents are its owner's only)."""
    with tempfile.TemporaryDirectory() as name:
        os.chmod(name, 0o755)
        yield Path(name)


def _backend(state_dir: Path, spawn: Spawn, driver_user: str,
             max_drivers: int = 1) -> LocalBackend:
    return LocalBackend(FakeKube(), state_dir, StatusTokens.in_state_dir(state_dir),  # type: ignore[arg-type]
                        max_drivers=max_drivers, driver_user=driver_user, spawn=spawn)


def _job(name: str) -> tuple[JobRef, JobPlan]:
    return JobRef(name, "ns", f"uid-{name}"), build_plan(name, "ns", SPEC)


def _provision(backend: LocalBackend, job: tuple[JobRef, JobPlan]) -> None:
    backend.provision(job[0], SPEC, job[1], 0)


# -- the bound on running drivers ------------------------------------------------------------

@pytest.mark.parametrize("bound", [1, 3])
def test_the_local_backend_under_100_applies_never_runs_more_drivers_than_the_bound_sampled(
        tmp_path: Path, driver_user: str, bound: int) -> None:
    drivers = FakeDrivers()
    backend = _backend(tmp_path / "state", drivers, driver_user, max_drivers=bound)
    jobs = [_job(f"job-{i}") for i in range(100)]
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(drivers.live())
            time.sleep(0.0002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    # 100 jobs applied at once: each provisioned from a thread of its own, all together.
    queued: dict[str, str] = {}
    barrier = threading.Barrier(len(jobs))

    def apply(job: tuple[JobRef, JobPlan]) -> None:
        barrier.wait()
        try:
            _provision(backend, job)
        except DriverQueued as exc:
            queued[job[0].name] = str(exc)

    _together([lambda job=job: apply(job) for job in jobs])
    assert drivers.live() == bound and len(queued) == 100 - bound
    assert set(queued.values()) == {f"{bound} of {bound} local drivers are running "
                                    "(--max-local-drivers); the job starts when one ends"}

    # Drivers end one by one while the queued jobs retry, as the controller does: each starts
    # once a slot is free, and only then.
    def retry(job: tuple[JobRef, JobPlan]) -> None:
        while True:
            try:
                _provision(backend, job)
                return
            except DriverQueued:
                time.sleep(random.uniform(0, 0.002))

    def end_drivers() -> None:
        while len(drivers.launches) < len(jobs) or drivers.live():
            time.sleep(random.uniform(0, 0.002))
            drivers.end_one()

    _together([end_drivers, *(lambda job=job: retry(job) for job in jobs
                              if job[0].name in queued)])
    done.set()
    sampler.join()
    assert drivers.peak == bound and max(samples) <= bound, (drivers.peak, max(samples))
    assert sorted(str(launch.log) for launch in drivers.launches) == sorted(
        str(backend.directory(job) / LOG) for job, _ in jobs)  # each job started once


def _together(work: list[Any]) -> None:
    threads = [threading.Thread(target=task) for task in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()


def test_a_start_that_fails_gives_its_slot_back(tmp_path: Path, driver_user: str) -> None:
    drivers = FakeDrivers()

    def failing(launch: DriverLaunch) -> DriverProcess:
        raise OSError("fork failed")

    backend = _backend(tmp_path / "state", failing, driver_user)
    with pytest.raises(OSError, match="fork failed"):
        _provision(backend, _job("first"))
    backend.spawn = drivers
    _provision(backend, _job("second"))
    assert drivers.live() == 1


def test_a_driver_still_running_after_an_operator_restart_holds_its_slot(
        tmp_path: Path, driver_user: str) -> None:
    survivor = subprocess.Popen(["sleep", "60"], start_new_session=True)
    directory = tmp_path / "state" / "ns" / "old"
    directory.mkdir(parents=True)
    (directory / RECORD).write_text(json.dumps(
        {"pid": survivor.pid, "port": 1, "planHash": "h", "restart": 0}))
    drivers = FakeDrivers()
    backend = _backend(tmp_path / "state", drivers, driver_user)  # the restarted operator
    try:
        with pytest.raises(DriverQueued, match="1 of 1 local drivers"):
            _provision(backend, _job("new"))
    finally:
        survivor.kill()
        survivor.wait()
    _provision(backend, _job("new"))
    assert drivers.live() == 1


def test_a_stopped_driver_holds_its_slot_until_it_has_ended(tmp_path: Path,
                                                            driver_user: str) -> None:
    trapped = tmp_path / "trapped"

    def slow_to_stop(launch: DriverLaunch) -> DriverProcess:
        return subprocess.Popen(["sh", "-c", f"trap 'sleep 3; exit 0' TERM; : > {trapped}; "
                                 "while :; do sleep 0.05; done"], start_new_session=True)

    backend = _backend(tmp_path / "state", slow_to_stop, driver_user)
    first, second = _job("first"), _job("second")
    _provision(backend, first)
    deadline = time.monotonic() + 30
    while not trapped.exists():  # the shell has set its trap (slow on a loaded machine)
        assert time.monotonic() < deadline
        time.sleep(0.02)
    stopping = threading.Thread(target=backend.stop_driver, args=(first[0],))
    stopping.start()
    time.sleep(0.3)
    with pytest.raises(DriverQueued):  # still ending
        _provision(backend, second)
    stopping.join()
    _provision(backend, second)
    backend.stop_driver(second[0])


# -- the user drivers run as -------------------------------------------------------------------

def test_an_operator_that_is_not_root_runs_drivers_as_itself() -> None:
    assert resolve_driver_user("anyone", 1000, 1000) == DriverUser(1000, 1000, switch=False)


def test_a_root_operator_runs_drivers_as_the_named_user_by_name_or_uid() -> None:
    other = next(entry for entry in pwd.getpwall() if entry.pw_uid != 0)
    expected = DriverUser(other.pw_uid, other.pw_gid, switch=True)
    assert resolve_driver_user(other.pw_name, 0, 0) == expected
    assert resolve_driver_user(str(other.pw_uid), 0, 0) == expected


def test_a_root_operator_without_the_driver_user_says_how_to_make_one() -> None:
    with pytest.raises(DriverUserError) as raised:
        resolve_driver_user("no-such-driver-user", 0, 0)
    assert "useradd --system --no-create-home no-such-driver-user" in str(raised.value)
    assert "--local-driver-user" in str(raised.value)
    for root in ("root", "0"):
        with pytest.raises(DriverUserError, match="must not run as root"):
            resolve_driver_user(root, 0, 0)


def test_roots_default_state_directory_is_one_its_drivers_can_reach(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert default_state_dir() == Path("/var/lib/dataflow-operator")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert default_state_dir() == Path.home() / ".local" / "state" / "dataflow-operator"
    monkeypatch.setenv("XDG_STATE_HOME", "/srv/state")
    assert default_state_dir() == Path("/srv/state/dataflow-operator")


def test_the_state_directory_gives_drivers_their_own_directory_and_nothing_more(
        tmp_path: Path, driver_user: str) -> None:
    drivers = FakeDrivers()
    state = tmp_path / "state"
    backend = _backend(state, drivers, driver_user)
    user = backend.user
    job = _job("wc")
    _provision(backend, job)
    directory = backend.directory(job[0])
    home = directory / HOME
    for operators in (directory.parent, directory):  # passed through, not listed or changed
        info = operators.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (
            os.geteuid(), user.gid, 0o710)
    for drivers_own in (home, state / "venvs"):
        info = drivers_own.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (
            user.uid, user.gid, 0o700)
    assert stat.S_IMODE((state / KEY_FILE).stat().st_mode) == 0o600
    assert (home / JOB_FILE_KEY).is_file() and (home / "spark-defaults.conf").is_file()
    [launch] = drivers.launches
    assert launch.user == user and launch.log == directory / LOG
    assert launch.env["HOME"] == str(home) and "SPARK_CONF_DIR" not in launch.env
    at = launch.command.index("--properties-file")
    assert launch.command[at + 1] == str(home / "spark-defaults.conf")
    assert str(home / STATUS_FILE) in launch.command


@pytest.mark.skipif(not ROOT, reason="only root runs drivers as a user of their own")
def test_a_root_operators_drivers_cannot_read_its_key_or_list_jobs(
        open_dir: Path, driver_user: str) -> None:
    backend = _backend(open_dir / "state", FakeDrivers(), driver_user)
    job = _job("wc")
    _provision(backend, job)
    directory = backend.directory(job[0])
    assert backend.user.switch and backend.user.uid != 0
    assert _blocked(backend.state_dir / KEY_FILE, backend.user, 0o4) is not None
    assert _blocked(directory, backend.user, 0o1) is None  # on the way to its home …
    assert _blocked(directory, backend.user, 0o4) is not None  # … but not listed
    assert _blocked(directory / HOME, backend.user, 0o7) is None


def test_a_new_run_never_writes_through_links_the_last_one_left(
        tmp_path: Path, driver_user: str) -> None:
    drivers = FakeDrivers()
    backend = _backend(tmp_path / "state", drivers, driver_user)
    job = _job("wc")
    _provision(backend, job)
    home = backend.directory(job[0]) / HOME
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (home / JOB_FILE_KEY).unlink()
    (home / JOB_FILE_KEY).symlink_to(victim)
    drivers.end_one(code=1)
    backend.stop_driver(job[0])
    _provision(backend, job)
    assert victim.read_text() == "keep"
    assert not (home / JOB_FILE_KEY).is_symlink()


def test_a_status_file_that_is_a_link_or_a_fifo_is_not_read(tmp_path: Path,
                                                            driver_user: str) -> None:
    drivers = FakeDrivers()
    backend = _backend(tmp_path / "state", drivers, driver_user)
    job = _job("wc")
    _provision(backend, job)
    drivers.end_one(code=1)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"jobStatus": "FINISHED", "error": "s3cr3t"}))
    status_file = backend.directory(job[0]) / HOME / STATUS_FILE
    status_file.symlink_to(secret)
    seen = backend.observe(job[0])
    assert seen.phase is DriverPhase.FAILED and seen.runner is None
    assert "s3cr3t" not in seen.message
    status_file.unlink()
    os.mkfifo(status_file)  # read without a writer, it would block forever
    assert backend.observe(job[0]).runner is None


def test_the_reachability_of_a_path_follows_permission_bits_and_links(open_dir: Path) -> None:
    private = open_dir / "private"
    private.mkdir(mode=0o700)
    (private / "python").touch(mode=0o755)
    passable = open_dir / "passable"
    passable.mkdir(mode=0o711)
    (open_dir / "python").symlink_to(private / "python")
    stranger = DriverUser(os.geteuid() + 1, os.getegid() + 1, switch=True)
    assert _blocked(passable, stranger, 0o1) is None
    assert _blocked(passable, stranger, 0o4) is not None  # may pass, may not list
    blocked = _blocked(open_dir / "python", stranger, 0o1)  # through the link
    assert blocked is not None and blocked.startswith(f"{private} is drwx------")
    member = DriverUser(stranger.uid, os.getegid(), switch=True)
    private.chmod(0o750)
    assert _blocked(open_dir / "python", member, 0o1) is None


@pytest.mark.skipif(not ROOT, reason="only root starts processes as another user")
def test_a_driver_started_by_root_runs_as_the_driver_user(tmp_path: Path,
                                                          driver_user: str) -> None:
    user = resolve_driver_user(driver_user, os.geteuid(), os.getegid())
    log = tmp_path / LOG
    process = spawn_driver(DriverLaunch(["/bin/sh", "-c", "id -u; id -g; id -G; umask"],
                                        {"PATH": "/usr/bin:/bin"}, "/", log, user))
    assert process.wait(timeout=30) == 0
    assert log.read_text().split() == [str(user.uid), str(user.gid), str(user.gid), "0027"]


@pytest.mark.skipif(not ROOT, reason="only root starts processes as another user")
def test_a_driver_that_cannot_reach_what_it_runs_is_not_started(tmp_path: Path,
                                                                driver_user: str) -> None:
    user = resolve_driver_user(driver_user, os.geteuid(), os.getegid())
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(DriverUserError, match="its working directory") as raised:
        spawn_driver(DriverLaunch(["/bin/true"], {"PATH": "/usr/bin:/bin"}, str(private),
                                  tmp_path / LOG, user))
    assert "drwx------" in str(raised.value) and not (tmp_path / LOG).exists()


# -- Secret references ---------------------------------------------------------------------------

class SecretKube(FakeKube):
    """One Secret in the job's namespace."""

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        if (kind, namespace, name) == ("Secret", "ns", "kafka-creds"):
            return {"data": {"password": base64.b64encode(b"hunter2").decode()}}
        return None


def test_a_drivers_secrets_are_files_only_its_user_reads_and_never_in_the_job_file(
        tmp_path: Path, driver_user: str) -> None:
    spec = DataflowJobSpec.model_validate({"sparkConf": {"spark.hadoop.fs.s3a.secret.key": {
        "secretKeyRef": {"name": "kafka-creds", "key": "password"}}}, "pipeline": SPEC.model_dump(
            by_alias=True)["pipeline"]})
    drivers = FakeDrivers()
    backend = LocalBackend(SecretKube(), tmp_path, StatusTokens.in_state_dir(tmp_path),  # type: ignore[arg-type]
                           max_drivers=2, driver_user=driver_user, spawn=drivers)
    job = JobRef("creds", "ns", "uid-creds")
    backend.provision(job, spec, build_plan("creds", "ns", spec), 0)
    env = drivers.launches[0].env
    secret = Path(env["DATAFLOW_SECRETS_DIR"]) / "kafka-creds" / "password"
    assert secret.read_bytes() == b"hunter2"
    info = secret.stat()
    assert (info.st_mode & 0o777, info.st_uid) == (0o600, backend.user.uid)
    home = secret.parent.parent.parent
    assert b"hunter2" not in (home / "job.yaml").read_bytes()
    assert "hunter2" not in json.dumps(env)

    missing = DataflowJobSpec.model_validate({**spec.model_dump(by_alias=True), "sparkConf": {
        "spark.a": {"secretKeyRef": {"name": "kafka-creds", "key": "nope"}}}})
    with pytest.raises(LookupError, match="key 'nope' of Secret ns/kafka-creds not found"):
        backend.provision(JobRef("other", "ns", "uid-o"), missing,
                          build_plan("other", "ns", missing), 0)
