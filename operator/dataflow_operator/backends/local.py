"""The embedded backend: the driver is a local process on ``local[N]`` Spark.

Same compile, same plan ConfigMap, same status document as the Kubernetes backend; only the
driver's home differs. The driver's files and log live under the operator's state directory,
so an operator restart adopts a driver that is still running instead of starting another.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataflow_engine.runtime.client.status_server import TOKEN_ENV, TOKEN_HEADER
from dataflow_engine.spec import DataflowJobSpec
from dataflow_operator.backends.base import (
    DriverObservation,
    DriverPhase,
    DriverQueued,
)
from dataflow_operator.kube import Kube
from dataflow_operator.plan import JOB_FILE_KEY, REQUIREMENTS_FILE, JobPlan
from dataflow_operator.resources.driver import (
    plan_config_map,
    py_file_arguments,
    restore_arguments,
)
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.status_model import DeploymentStatus, DriverStatus
from dataflow_operator.status_tokens import StatusTokens

_TERMINAL_JOB_STATUSES = {"FINISHED", "FAILED", "CANCELED"}


@dataclass
class LocalDriver:
    pid: int
    port: int
    directory: Path
    plan_hash: str
    process: subprocess.Popen[bytes] | None = None

    def exit_code(self) -> int | None:
        """None while it runs; its exit code once ended (-1 if another process started it)."""
        if self.process is not None:
            return self.process.poll()
        return None if _alive(self.pid) else -1


#: The only variables a local driver inherits from the operator: what finds Python, Java and
#: the locale. Credentials (KUBECONFIG, cloud and API tokens) stay behind.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "JAVA_HOME", "PYSPARK_PYTHON", "SPARK_HOME",
                 "TMPDIR", "VIRTUAL_ENV", "SSL_CERT_FILE", "SSL_CERT_DIR")


def driver_environment(directory: Path) -> dict[str, str]:
    """A local driver's environment: reduced to what runs Spark, with the job's own directory
    as its home, so that no kubeconfig or cloud credentials are found by default. (User code
    still runs as the operator's user: the local backend is for a developer's machine.)"""
    env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
    env.update({"HOME": str(directory), "SPARK_CONF_DIR": str(directory),
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
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
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[-1].startswith("Z"))


class LocalBackend:
    name = "local"

    def __init__(self, kube: Kube, state_dir: Path, tokens: StatusTokens,
                 spark_master: str = "local[2]", max_drivers: int = 1) -> None:
        self.kube = kube
        self.state_dir = state_dir
        self.tokens = tokens
        self.spark_master = spark_master
        #: Drivers running at once; more jobs wait (Provisioned=False, reason Queued).
        self.max_drivers = max_drivers
        self.drivers: dict[tuple[str, str], LocalDriver] = {}

    def directory(self, job: JobRef) -> Path:
        return self.state_dir / job.namespace / job.name

    def provision(self, job: JobRef, spec: DataflowJobSpec, plan: JobPlan,
                  restart: int, deployment: DeploymentStatus | None = None) -> DriverStatus:
        conf = {"spark.app.name": job.name, "spark.ui.enabled": "false", **spec.spark_conf}
        config_map = plan_config_map(job, plan.files, conf, {}, plan.status.hash)
        self.kube.create_or_adopt(config_map)
        driver = self._adopt(job)
        if driver is not None and driver.plan_hash != plan.status.hash:
            self.stop_driver(job)
            driver = None
        if driver is None:
            driver = self._ended_run(job, plan.status.hash, restart)
        if driver is None:
            running = self._running()
            if running >= self.max_drivers:
                raise DriverQueued(f"{running} of {self.max_drivers} local drivers are running "
                                   "(--max-local-drivers); the job starts when one ends")
            driver = self._start(job, spec, config_map["data"], plan.status.hash, restart,
                                 deployment)
        return DriverStatus(pid=driver.pid, status_url=f"http://127.0.0.1:{driver.port}/status",
                            logs=str(self.directory(job) / "driver.log"))

    def _running(self) -> int:
        """Drivers of this operator that are still running."""
        return sum(1 for driver in self.drivers.values() if driver.exit_code() is None)

    def _ended_run(self, job: JobRef, plan_hash: str, restart: int) -> LocalDriver | None:
        """The record of this very run (plan and restart) whose driver has already ended, e.g.
        while the operator was down: its outcome is in its status file, and it must be
        observed, not run a second time."""
        directory = self.directory(job)
        data = _read_json(directory / "driver.json")
        if data is None or (data.get("planHash"), data.get("restart")) != (plan_hash, restart):
            return None
        return LocalDriver(data["pid"], data["port"], directory, plan_hash)

    def _start(self, job: JobRef, spec: DataflowJobSpec, files: dict[str, str], plan_hash: str,
               restart: int, deployment: DeploymentStatus | None) -> LocalDriver:
        directory = self.directory(job)
        directory.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (directory / name).write_text(content)
        (directory / "status.json").unlink(missing_ok=True)
        self._write_py_files(job, spec, directory / "pyfiles")
        port = _free_port()
        command = [sys.executable, "-m", "dataflow_engine.cli", "run",
                   str(directory / JOB_FILE_KEY), "--master", self.spark_master,
                   "--status-port", str(port), "--status-file", str(directory / "status.json"),
                   "--no-progress", *restore_arguments(spec, deployment),
                   *py_file_arguments(spec, str(directory / "pyfiles"))]
        if spec.requirements:  # the driver process builds the job's environment, then runs in it
            command = [sys.executable, "-m", "dataflow_engine.runtime.client.environment",
                       str(directory / REQUIREMENTS_FILE), "--cache", str(self.state_dir / "venvs"),
                       "--exec", *command[1:]]
        env = {**driver_environment(directory), TOKEN_ENV: self.tokens.for_job(job)}
        with open(directory / "driver.log", "ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                       cwd=os.getcwd(), start_new_session=True)
        driver = LocalDriver(process.pid, port, directory, plan_hash, process)
        (directory / "driver.json").write_text(json.dumps(
            {"pid": driver.pid, "port": port, "planHash": plan_hash, "restart": restart}))
        self.drivers[(job.namespace, job.name)] = driver
        return driver

    def _write_py_files(self, job: JobRef, spec: DataflowJobSpec, root: Path) -> None:
        """spec.pyFiles' ConfigMaps as files, where py_file_arguments says they are (a pod
        mounts them there)."""
        shutil.rmtree(root, ignore_errors=True)
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

    def _adopt(self, job: JobRef) -> LocalDriver | None:
        """The running driver of this job, including one started before an operator restart."""
        known = self.drivers.get((job.namespace, job.name))
        if known is not None:
            return known
        record = self.directory(job) / "driver.json"
        if not record.exists():
            return None
        data = json.loads(record.read_text())
        if not _alive(data["pid"]):
            return None
        driver = LocalDriver(data["pid"], data["port"], record.parent, data["planHash"])
        self.drivers[(job.namespace, job.name)] = driver
        return driver

    def forget(self, job: JobRef) -> None:
        """The job's files (manifest, status, driver log) go with it."""
        shutil.rmtree(self.directory(job), ignore_errors=True)
        with contextlib.suppress(OSError):
            self.directory(job).parent.rmdir()  # the namespace's directory, once empty

    def clean_up(self, job: JobRef) -> bool:
        """The ended run's files: its driver log, status and record."""
        existed = self.directory(job).exists()
        self.drivers.pop((job.namespace, job.name), None)
        self.forget(job)
        return existed

    def stop_driver(self, job: JobRef) -> None:
        """Stops the driver on purpose (suspend, redeploy, restart, delete): its run is over,
        so the next provision starts a new one."""
        driver = self._adopt(job)
        self.drivers.pop((job.namespace, job.name), None)
        (self.directory(job) / "driver.json").unlink(missing_ok=True)
        if driver is None:
            return
        try:
            os.killpg(driver.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(100):
            if driver.process is not None and driver.process.poll() is not None:
                return
            if driver.process is None and not _alive(driver.pid):
                return
            time.sleep(0.1)
        os.killpg(driver.pid, signal.SIGKILL)

    def request_savepoint(self, job: JobRef, request: dict[str, Any]) -> None:
        driver = self._adopt(job)
        if driver is None:
            raise RuntimeError("no driver runs")
        post = urllib.request.Request(
            f"http://127.0.0.1:{driver.port}/savepoints", data=json.dumps(request).encode(),
            headers={"Content-Type": "application/json",
                     TOKEN_HEADER: self.tokens.for_job(job)})
        with urllib.request.urlopen(post, timeout=10) as answer:
            answer.read()

    def snapshot(self, jobs: list[JobRef]) -> None:
        """Local drivers are looked at one by one; nothing to read in bulk."""

    def observe(self, job: JobRef, snapshot: object = None) -> DriverObservation:
        driver = self._adopt(job)
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
        record = directory / "driver.json"
        if not record.exists():
            return DriverObservation(DriverPhase.MISSING)
        plan_hash = json.loads(record.read_text())["planHash"]
        runner = _read_json(directory / "status.json")
        final = (runner or {}).get("jobStatus")
        succeeded = exit_code == 0 or (exit_code in (None, -1) and final == "FINISHED")
        if succeeded:
            return DriverObservation(DriverPhase.SUCCEEDED, runner, plan_hash=plan_hash)
        message = (runner or {}).get("error") or _log_tail(directory / "driver.log")
        code = "unknown" if exit_code in (None, -1) else str(exit_code)
        return DriverObservation(DriverPhase.FAILED, runner,
                                 f"driver exited with code {code}: {message}", plan_hash)

    @staticmethod
    def _runner_status(driver: LocalDriver) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{driver.port}/status",
                                        timeout=2) as response:
                data = json.load(response)
        except (OSError, ValueError):
            data = _read_json(driver.directory / "status.json")
        return data if isinstance(data, dict) else None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
