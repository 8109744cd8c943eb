"""Start detached component processes and stop them again by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_ports(count: int) -> list[int]:
    """`count` distinct free TCP ports on 127.0.0.1 (held open together so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def start(
    name: str, argv: list[str], state: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `argv` in its own session, logging to state/logs/<name>.log; record its pid."""
    logs = state / "logs"
    logs.mkdir(exist_ok=True)
    with (logs / f"{name}.log").open("ab") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=state,
            env=env,
            start_new_session=True,  # outlives `hack/cluster up`; not hit by the caller's ^C
        )
    (state / "pids").mkdir(exist_ok=True)
    (state / "pids" / name).write_text(f"{process.pid}\n")
    return process


def cmdline(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode(errors="replace")


def is_ours(pid: int, state: Path) -> bool:
    """True if `pid` is alive and was started for this plane (its argv names the state dir)."""
    command = cmdline(pid)
    if command is None or str(state) not in command:
        return False
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie is as good as gone


def stop_children(children: dict[str, subprocess.Popen[bytes]], timeout: float = 5.0) -> None:
    """Stop processes this process started (a failed `up`): SIGTERM, then SIGKILL."""
    for child in children.values():
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + timeout
    for child in children.values():
        try:
            child.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def stop(pids: dict[str, int], state: Path, timeout: float = 15.0) -> list[str]:
    """SIGTERM each live pid of this plane, SIGKILL what is left after `timeout`.

    Returns the names of the processes that had to be killed.
    """
    live = {name: pid for name, pid in pids.items() if is_ours(pid, state)}
    for pid in live.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(is_ours(p, state) for p in live.values()):
        time.sleep(0.1)
    killed = []
    for name, pid in live.items():
        if is_ours(pid, state):
            killed.append(name)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return killed


def read_pids(state: Path) -> dict[str, int]:
    pids = {}
    directory = state / "pids"
    if directory.is_dir():
        for file in directory.iterdir():
            try:
                pids[file.name] = int(file.read_text().strip())
            except ValueError:
                continue
    return pids


def tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
