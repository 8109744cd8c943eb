"""The embedded backend: the driver is a local process on ``local[N]`` Spark.

Same compile, same plan ConfigMap, same status document as the Kubernetes backend; only the
driver's home differs. The driver's files and log live under the operator's state directory,
so an operator restart adopts a driver that is still running instead of starting another.

A job's directory (``<state-dir>/<namespace>/<name>``) is the operator's: the driver's record
and log. Inside it, ``home`` is the driver's own: the job's files, and what the driver writes
(its status file, ``$HOME``). An operator running as root starts its drivers as an
unprivileged user of their own (``--local-driver-user``) and never writes where a driver
could have put a link, nor follows one when it reads.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest import (
    CLASS_ARCHIVE_ENV,
    SAVEPOINTS_DISPOSE_PATH,
    SAVEPOINTS_PATH,
    SECRETS_DIR_ENV,
    STATUS_PATH,
    TOKEN_ENV,
    TOKEN_HEADER,
    DriverStatusDocument,
    SavepointDisposeRequest,
    SavepointTriggerRequest,
    parse_dispose_response,
    parse_status,
)
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_engine.spec.secret_refs import plain, secret_keys_by_name
from dataflow_operator.backends.base import (
    DriverObservation,
    DriverPhase,
    DriverQueued,
)
from dataflow_operator.backends.status_tokens import StatusTokens
from dataflow_operator.kube import Kube
from dataflow_operator.plan import JOB_FILE_KEY, REQUIREMENTS_FILE, JobPlan
from dataflow_operator.resources.driver import (
    JVM_OPTIONS_ENV,
    PROPERTIES_KEY,
    plan_config_map,
    py_file_arguments,
    restore_arguments,
)
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.settings import OperatorSettings
from dataflow_operator.status.model import DeploymentStatus, DriverStatus

_TERMINAL_JOB_STATUSES = {"FINISHED", "FAILED", "CANCELED"}

#: In a job's directory: the operator's record of its driver, and the driver's log.
RECORD = "driver.json"
LOG = "driver.log"
#: In a job's directory: the driver's own directory, made afresh for each run.
HOME = "home"
#: In the driver's directory: its status document, which the runner writes.
STATUS_FILE = "status.json"
#: In the driver's directory: the keys of the Secrets the job references, <name>/<key>.
SECRETS = "secrets"
#: What a driver that runs as a user of its own creates is not for other users.
DRIVER_UMASK = 0o027


class DriverUserError(RuntimeError):
    """Local drivers cannot run as the user they must run as (the operator does not start)."""


@dataclass(frozen=True)
class DriverUser:
    """Who local drivers run as. ``switch``: a user of their own, because the operator runs as
    root; otherwise the operator's user, and there is nothing to drop."""

    uid: int
    gid: int
    switch: bool


def resolve_driver_user(name: str, euid: int, egid: int) -> DriverUser:
    """An operator running as root (``euid``) starts its drivers as ``name`` (a user name or a
    uid), never as root: a job's code must not get the machine. Any other operator cannot
    change users, and runs them as itself."""
    if euid != 0:
        return DriverUser(euid, egid, switch=False)
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except KeyError:
        create = f"--uid {name} dataflow-driver" if name.isdigit() else name
        raise DriverUserError(
            f"the operator runs as root, so local drivers run as the user {name} "
            f"(--local-driver-user), which does not exist: create it (useradd --system "
            f"--no-create-home {create}) or choose another (--local-driver-user NAME or UID)"
        ) from None
    if entry.pw_uid == 0:
        raise DriverUserError(f"--local-driver-user {name} is root: local drivers must not run "
                              "as root; choose an unprivileged user")
    return DriverUser(entry.pw_uid, entry.pw_gid, switch=True)


class DriverProcess(Protocol):
    """What the backend needs of a started driver process (a ``subprocess.Popen``)."""

    pid: int

    def poll(self) -> int | None: ...


@dataclass(frozen=True)
class DriverLaunch:
    command: list[str]
    env: dict[str, str]
    cwd: str
    #: Opened (appended to) by the operator: the driver gets the file, not its path.
    log: Path
    user: DriverUser


#: Starts a driver process; the backend's own is spawn_driver.
Spawn = Callable[[DriverLaunch], DriverProcess]


def spawn_driver(launch: DriverLaunch) -> subprocess.Popen[bytes]:
    """Starts the driver in a session of its own (stop_driver signals the group). A user of
    its own gets no supplementary groups of the operator's and umask 0o027, and is first
    checked to reach what it runs: a Python below /root would otherwise fail with a bare
    EACCES, or an unreadable PYTHONPATH entry with an ImportError in the driver's log."""
    user = launch.user
    if user.switch:
        _check_reachable(launch)
    with open(launch.log, "ab") as log:
        return subprocess.Popen(launch.command, stdout=log, stderr=subprocess.STDOUT,
                                env=launch.env, cwd=launch.cwd, start_new_session=True,
                                user=user.uid if user.switch else None,
                                group=user.gid if user.switch else None,
                                extra_groups=[] if user.switch else None,
                                umask=DRIVER_UMASK if user.switch else -1)


def _check_reachable(launch: DriverLaunch) -> None:
    """Raises DriverUserError unless the launch's user may run its interpreter, enter its
    working directory, write its temporary directory and its home (in the state directory),
    and read its PYTHONPATH and Java."""
    env = launch.env
    needs = [("its interpreter", launch.command[0], 0o1),
             ("its working directory", launch.cwd, 0o1),
             ("its TMPDIR", env.get("TMPDIR", "/tmp"), 0o3)]
    needs += [(f"its {key}", env[key], need) for key, need in (("HOME", 0o7), ("JAVA_HOME", 0o5))
              if key in env]
    needs += [("its PYTHONPATH", entry, 0o5 if os.path.isdir(entry) else 0o4)
              for entry in env.get("PYTHONPATH", "").split(os.pathsep)
              if entry and os.path.exists(entry)]
    for purpose, path, need in needs:
        blocked = _blocked(Path(path), launch.user, need)
        if blocked is not None:
            raise DriverUserError(
                f"local drivers run as uid {launch.user.uid} (--local-driver-user), which cannot "
                f"use {path} ({purpose}): {blocked}; make it reachable for that user, or move "
                "it (e.g. a Python installed outside /root, a --state-dir or working directory "
                "that user can enter)")


def _blocked(path: Path, user: DriverUser, need: int) -> str | None:
    """Where ``user`` is stopped on its way to ``path`` (by the path as given and by its real
    path): a directory it may not search, or the path itself without ``need`` (rwx bits, as
    for "other"); None if it gets there. The owner's, else the group's, else the others' bits
    count, as the kernel reads them for a user without supplementary groups; ACLs are not read.
    """
    for target in dict.fromkeys([Path(os.path.abspath(path)), Path(os.path.realpath(path))]):
        for step, bits in [*((p, 0o1) for p in reversed(target.parents)), (target, need)]:
            try:
                info = os.stat(step)
            except OSError as exc:
                return f"{step}: {exc.strerror}"
            shift = 6 if info.st_uid == user.uid else 3 if info.st_gid == user.gid else 0
            if (info.st_mode >> shift) & bits != bits:
                return (f"{step} is {stat.filemode(info.st_mode)}, owned by uid {info.st_uid} "
                        f"gid {info.st_gid}")
    return None


@dataclass
class LocalDriver:
    pid: int
    port: int
    directory: Path
    plan_hash: str
    process: DriverProcess | None = None

    def exit_code(self) -> int | None:
        """None while it runs; its exit code once ended (-1 if another process started it)."""
        if self.process is not None:
            return self.process.poll()
        return None if _alive(self.pid) else -1


#: The only variables a local driver inherits from the operator: what finds Python, Java and
#: the locale, and the class archive of Spark's classes. Credentials (KUBECONFIG, cloud and API
#: tokens) stay behind.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "JAVA_HOME", "PYSPARK_PYTHON", "SPARK_HOME",
                 "TMPDIR", "VIRTUAL_ENV", "SSL_CERT_FILE", "SSL_CERT_DIR", CLASS_ARCHIVE_ENV)


def driver_environment(directory: Path, jvm_options: str = "") -> dict[str, str]:
    """A local driver's environment: reduced to what runs Spark, with the driver's own
    directory as its home, so that no kubeconfig or cloud credentials are found by default;
    the operator's ``jvm_options`` for its JVM (through Spark's launcher). (User code runs as
    the drivers' user, which is the operator's unless that is root: the local backend is for
    a developer's machine.)"""
    env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
    env.update({"HOME": str(directory), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    if jvm_options:
        env[JVM_OPTIONS_ENV] = jvm_options
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}/stat")
    return not (proc.exists() and proc.read_text().split(") ", 1)[-1].startswith("Z"))


def _terminate(driver: LocalDriver) -> None:
    """SIGTERM to the driver's process group, SIGKILL after 10 s; returns once it ended (or
    did not, 10 s after SIGKILL)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(driver.pid, sig)
        except ProcessLookupError:
            return
        for _ in range(100):
            if driver.exit_code() is not None:
                return
            time.sleep(0.1)


class LocalBackend:
    name = "local"

    def __init__(self, kube: Kube, state_dir: Path, tokens: StatusTokens,
                 spark_master: str = "local[2]", max_drivers: int = 1,
                 driver_user: str = OperatorSettings.local_driver_user,
                 spawn: Spawn = spawn_driver, jvm_options: str = "") -> None:
        self.kube = kube
        self.state_dir = state_dir
        self.tokens = tokens
        self.spark_master = spark_master
        #: Drivers running at once; more jobs wait (Provisioned=False, reason Queued).
        self.max_drivers = max_drivers
        self.user = resolve_driver_user(driver_user, os.geteuid(), os.getegid())
        self.spawn = spawn
        self.jvm_options = jvm_options
        #: Guards drivers and starting: provision, observe and stop_driver run on many threads.
        self._lock = threading.Lock()
        self.drivers: dict[tuple[str, str], LocalDriver] = {}
        #: Slots taken by drivers being started (reserved before their process is spawned).
        self._starting = 0
        state_dir.mkdir(parents=True, exist_ok=True)
        self._driver_dir(self.venvs)
        self._adopt_running()

    @property
    def venvs(self) -> Path:
        """The cache of jobs' Python environments, which drivers build (as their user)."""
        return self.state_dir / "venvs"

    def directory(self, job: JobRef) -> Path:
        return self.state_dir / job.namespace / job.name

    def provision(self, job: JobRef, spec: DataflowJobSpec, plan: JobPlan,
                  restart: int, deployment: DeploymentStatus | None = None) -> DriverStatus:
        conf = {"spark.app.name": job.name, "spark.ui.enabled": "false",
                **plain(spec.spark_conf)}
        config_map = plan_config_map(job, plan.files, conf, {}, plan.status.hash)
        self.kube.create_or_adopt(config_map)
        driver = self._known(job)
        if driver is not None and driver.plan_hash != plan.status.hash:
            self.stop_driver(job)
            driver = None
        if driver is None:
            driver = self._ended_run(job, plan.status.hash, restart)
        if driver is None:
            driver = self._start(job, spec, config_map["data"], plan.status.hash, restart,
                                 deployment)
        return DriverStatus(pid=driver.pid, status_url=f"http://127.0.0.1:{driver.port}/status",
                            logs=str(self.directory(job) / LOG))

    def _running(self) -> int:
        """Slots taken: drivers of this operator still running, and those being started. The
        lock is held."""
        return self._starting + sum(1 for driver in self.drivers.values()
                                    if driver.exit_code() is None)

    def _reserve(self) -> None:
        """Takes a slot for a driver about to start, or raises DriverQueued: counting and
        taking are one step, so jobs provisioned at once never start more than the bound."""
        with self._lock:
            running = self._running()
            if running >= self.max_drivers:
                raise DriverQueued(f"{running} of {self.max_drivers} local drivers are running "
                                   "(--max-local-drivers); the job starts when one ends")
            self._starting += 1

    def _admit(self, job: JobRef, driver: LocalDriver | None) -> None:
        """Ends a reservation: the started driver holds the slot from now on (until it is
        known to have ended); None gives it back (the start failed)."""
        with self._lock:
            self._starting -= 1
            if driver is not None:
                self.drivers[(job.namespace, job.name)] = driver

    def _known(self, job: JobRef) -> LocalDriver | None:
        """The job's driver: started by this operator, or running when it started."""
        with self._lock:
            return self.drivers.get((job.namespace, job.name))

    def _adopt_running(self) -> None:
        """Drivers that outlived an operator restart are this operator's again, and hold their
        slots before any job is provisioned."""
        for record in self.state_dir.glob(f"*/*/{RECORD}"):
            data = _read_json(record)
            if data is not None and _alive(data["pid"]):
                self.drivers[(record.parent.parent.name, record.parent.name)] = LocalDriver(
                    data["pid"], data["port"], record.parent, data["planHash"])

    def _ended_run(self, job: JobRef, plan_hash: str, restart: int) -> LocalDriver | None:
        """The record of this very run (plan and restart) whose driver has already ended, e.g.
        while the operator was down: its outcome is in its status file, and it must be
        observed, not run a second time."""
        directory = self.directory(job)
        data = _read_json(directory / RECORD)
        if data is None or (data.get("planHash"), data.get("restart")) != (plan_hash, restart):
            return None
        return LocalDriver(data["pid"], data["port"], directory, plan_hash)

    def _start(self, job: JobRef, spec: DataflowJobSpec, files: dict[str, str], plan_hash: str,
               restart: int, deployment: DeploymentStatus | None) -> LocalDriver:
        directory = self.directory(job)
        self._reserve()
        try:
            home = self._new_home(job, spec, files)
            port = _free_port()
            command = [sys.executable, "-m", "dataflow_engine.cli", "run",
                       str(home / JOB_FILE_KEY), "--master", self.spark_master,
                       "--properties-file", str(home / PROPERTIES_KEY),
                       "--status-port", str(port), "--status-file", str(home / STATUS_FILE),
                       "--no-progress", *restore_arguments(spec, deployment),
                       *py_file_arguments(spec, str(home / "pyfiles"))]
            if spec.requirements:  # the driver process builds the job's environment, then runs
                command = [sys.executable, "-m", "dataflow_engine.runtime.jobmaster.environment",
                           str(home / REQUIREMENTS_FILE), "--cache", str(self.venvs),
                           "--exec", *command[1:]]
            env = {**driver_environment(home, self.jvm_options),
                   TOKEN_ENV: self.tokens.for_job(job), SECRETS_DIR_ENV: str(home / SECRETS)}
            process = self.spawn(DriverLaunch(command, env, os.getcwd(), directory / LOG,
                                              self.user))
        except BaseException:
            self._admit(job, None)
            raise
        driver = LocalDriver(process.pid, port, directory, plan_hash, process)
        self._admit(job, driver)
        (directory / RECORD).write_text(json.dumps(
            {"pid": driver.pid, "port": port, "planHash": plan_hash, "restart": restart}))
        return driver

    def _new_home(self, job: JobRef, spec: DataflowJobSpec, files: dict[str, str]) -> Path:
        """The run's own directory, made afresh: the job's files, readable by the driver, and
        room for what it writes. Built aside, handed to the drivers' user, then renamed into
        place: the operator never writes into a directory a driver could have put a link in."""
        directory = self.directory(job)
        self._operator_dir(directory.parent)
        self._operator_dir(directory)
        staging, home = directory / f".{HOME}", directory / HOME
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        for name, content in files.items():
            (staging / name).write_text(content)
        self._write_py_files(job, spec, staging / "pyfiles")
        self._write_secrets(job, spec, staging / SECRETS)
        self._driver_dir(staging)
        shutil.rmtree(home, ignore_errors=True)  # never follows a link the driver left
        staging.rename(home)
        return home

    def _operator_dir(self, path: Path) -> None:
        """A directory of the operator's (a namespace's, a job's), which drivers pass through
        to their own but can neither list nor change: mode 0710, the drivers' group."""
        path.mkdir(exist_ok=True)
        os.chown(path, -1, self.user.gid)
        path.chmod(0o710)

    def _driver_dir(self, path: Path) -> None:
        """A directory of the drivers' own (a run's home, the environments' cache)."""
        path.mkdir(exist_ok=True)
        os.chown(path, self.user.uid, self.user.gid)
        path.chmod(0o700)

    def _write_secrets(self, job: JobRef, spec: DataflowJobSpec, root: Path) -> None:
        """The referenced keys of the job's Secrets, as a pod would mount them: files only the
        driver's user may read, in the run's own directory (removed with it)."""
        for name, keys in sorted(secret_keys_by_name(spec).items()):
            secret = self.kube.get("Secret", job.namespace, name)
            data = (secret or {}).get("data") or {}
            directory = root / name
            directory.mkdir(parents=True, mode=0o700)
            for key in keys:
                if key not in data:
                    raise LookupError(f"secretKeyRef: key {key!r} of Secret "
                                      f"{job.namespace}/{name} not found")
                descriptor = os.open(directory / key, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                                     0o600)
                with open(descriptor, "wb") as f:
                    f.write(base64.b64decode(data[key]))
                os.chown(directory / key, self.user.uid, self.user.gid)
            os.chown(directory, self.user.uid, self.user.gid)
        if root.exists():
            os.chown(root, self.user.uid, self.user.gid)
            root.chmod(0o700)

    def _write_py_files(self, job: JobRef, spec: DataflowJobSpec, root: Path) -> None:
        """spec.pyFiles' ConfigMaps as files, where py_file_arguments says they are (a pod
        mounts them there)."""
        for index, entry in enumerate(spec.py_files):
            if entry.config_map is None:
                continue
            config_map = self.kube.get("ConfigMap", job.namespace, entry.config_map)
            if config_map is None:
                raise LookupError(f"spec.pyFiles[{index}].configMap: ConfigMap "
                                  f"{job.namespace}/{entry.config_map} not found")
            directory = root / str(index)
            directory.mkdir(parents=True)
            contents = {**{k: v.encode() for k, v in (config_map.get("data") or {}).items()},
                        **{k: base64.b64decode(v)
                           for k, v in (config_map.get("binaryData") or {}).items()}}
            for key, content in contents.items():
                if entry.key in (None, key):
                    (directory / key).write_bytes(content)

    def forget(self, job: JobRef) -> None:
        """The job's files (manifest, status, driver log) go with it."""
        shutil.rmtree(self.directory(job), ignore_errors=True)
        with contextlib.suppress(OSError):
            self.directory(job).parent.rmdir()  # the namespace's directory, once empty

    def clean_up(self, job: JobRef) -> bool:
        """The ended run's files (its driver log, status and record), after its driver, should
        it still run: its slot is free only once it has ended."""
        existed = self.directory(job).exists()
        self.stop_driver(job)
        self.forget(job)
        return existed

    def stop_driver(self, job: JobRef) -> None:
        """Stops the driver on purpose (suspend, redeploy, restart, delete): its run is over,
        so the next provision starts a new one. Its slot is free once it has ended."""
        driver = self._known(job)
        (self.directory(job) / RECORD).unlink(missing_ok=True)
        if driver is None:
            return
        if driver.exit_code() is None:
            _terminate(driver)
        with self._lock:
            if self.drivers.get((job.namespace, job.name)) is driver:
                del self.drivers[(job.namespace, job.name)]

    def request_savepoint(self, job: JobRef, request: SavepointTriggerRequest) -> None:
        self._post(job, SAVEPOINTS_PATH, request.to_json())

    def dispose_savepoint(self, job: JobRef, path: str) -> bool:
        answer = parse_dispose_response(self._post(
            job, SAVEPOINTS_DISPOSE_PATH, SavepointDisposeRequest(path=path).to_json()))
        if answer is None:
            raise RuntimeError("the driver's answer to the disposal is not one this operator "
                               "reads")
        return answer.disposed

    def _post(self, job: JobRef, path: str, body: dict[str, Any]) -> Any:
        """POSTs to the job's running driver (as its own token allows); its JSON answer."""
        driver = self._known(job)
        if driver is None:
            raise RuntimeError("no driver runs")
        post = urllib.request.Request(
            f"http://127.0.0.1:{driver.port}{path}", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     TOKEN_HEADER: self.tokens.for_job(job)})
        with urllib.request.urlopen(post, timeout=30) as answer:
            return json.loads(answer.read() or b"{}")

    def snapshot(self, jobs: list[JobRef]) -> None:
        """Local drivers are looked at one by one; nothing to read in bulk."""

    def observe(self, job: JobRef, snapshot: object = None) -> DriverObservation:
        driver = self._known(job)
        if driver is None:
            return self._after_exit(job, None)
        exit_code = driver.exit_code()
        if exit_code is None:
            return DriverObservation(DriverPhase.RUNNING, self._runner_status(driver),
                                     plan_hash=driver.plan_hash)
        return self._after_exit(job, exit_code)

    def _after_exit(self, job: JobRef, exit_code: int | None) -> DriverObservation:
        """A finished driver leaves its last status document in the status file."""
        directory = self.directory(job)
        record = _read_json(directory / RECORD)
        if record is None:
            return DriverObservation(DriverPhase.MISSING)
        plan_hash = record["planHash"]
        runner = parse_status(_read_json(directory / HOME / STATUS_FILE))
        finished = runner is not None and runner.job_status is JobStatus.FINISHED
        succeeded = exit_code == 0 or (exit_code in (None, -1) and finished)
        if succeeded:
            return DriverObservation(DriverPhase.SUCCEEDED, runner, plan_hash=plan_hash)
        message = (runner.error if runner else None) or _log_tail(directory / LOG)
        code = "unknown" if exit_code in (None, -1) else str(exit_code)
        return DriverObservation(DriverPhase.FAILED, runner,
                                 f"driver exited with code {code}: {message}", plan_hash)

    @staticmethod
    def _runner_status(driver: LocalDriver) -> DriverStatusDocument | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{driver.port}{STATUS_PATH}",
                                        timeout=2) as response:
                data = json.load(response)
        except (OSError, ValueError):
            data = _read_json(driver.directory / HOME / STATUS_FILE)
        return parse_status(data)


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from a regular file. Never through a link, nor from a FIFO: a driver
    could put either where its status file belongs, to have the operator (maybe root) read
    another file into the job's status, or hang."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        try:
            data = json.loads(f.read())
        except (OSError, ValueError):
            return None
    return data if isinstance(data, dict) else None


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
