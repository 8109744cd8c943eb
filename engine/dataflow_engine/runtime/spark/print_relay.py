"""Relays print-sink output to the driver's stdout in local mode.

A local Spark worker's stdout ends up on the JVM's stderr, mixed with Spark's logs; Flink's
MiniCluster prints to the console instead. So in local mode print sinks write to files in a
spool directory and the driver copies complete lines to its own ``sys.stdout`` as they appear
(through the progress display, when there is one). A closed spool file (renamed ``.done``)
is removed once relayed, so a continuous job's epochs do not pile files up.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading


class PrintRelay:
    def __init__(self, interval: float = 0.1) -> None:
        self.directory = tempfile.mkdtemp(prefix="dataflow-print-")
        self.interval = interval
        self._offsets: dict[str, int] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="dataflow-print-relay",
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.drain()

    def drain(self) -> None:
        """Copies every complete new line to ``sys.stdout``."""
        with self._lock:
            try:
                names = sorted(os.listdir(self.directory), key=_spool_order)
            except FileNotFoundError:
                return
            out: list[str] = []
            for name in names:
                path = os.path.join(self.directory, name)
                stem, _, suffix = name.rpartition(".")
                offset = self._offsets.get(stem, 0)
                try:
                    with open(path, "rb") as f:
                        f.seek(offset)
                        data = f.read()
                except FileNotFoundError:  # renamed .done meanwhile: read on the next pass
                    continue
                end = data.rfind(b"\n") + 1
                if end:
                    out.append(data[:end].decode("utf-8", "replace"))
                    self._offsets[stem] = offset + end
                if suffix == "done":  # its writer closed it: relayed whole, forget it
                    os.remove(path)
                    self._offsets.pop(stem, None)
            if out:
                sys.stdout.write("".join(out))
                sys.stdout.flush()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.drain()
        shutil.rmtree(self.directory, ignore_errors=True)


def _spool_order(name: str) -> tuple[int, int, int, str]:
    """A print sink's files (``node-subtask-attempt-id.out``) by node, then subtask: the order
    a task flushes its sinks in (OperatorChain.flush_printed), numerically; others after."""
    node, subtask, *_ = [*name.split("-", 2), ""]
    if node.isdigit() and subtask.isdigit():
        return 0, int(node), int(subtask), name
    return 1, 0, 0, name
