"""The live progress display and the summary table of ``dataflow run`` (rich, on stderr)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.rest.status import DriverStatusDocument

_STATE_STYLE = {
    ExecutionState.FINISHED: "green",
    ExecutionState.RUNNING: "cyan",
    ExecutionState.FAILED: "bold red",
    ExecutionState.CANCELED: "yellow",
    ExecutionState.SCHEDULED: "blue",
}
_JOB_STYLE = {JobStatus.FINISHED: "bold green", JobStatus.FAILED: "bold red",
              JobStatus.RUNNING: "bold cyan", JobStatus.CANCELED: "bold yellow"}


def render(status: DriverStatusDocument, *, bars: bool = True) -> Table:
    """One row per JobVertex: state, subtasks finished / total, records in and out."""
    title = Text.assemble(
        (status.job_name, "bold"), "  ",
        (status.job_status.value, _JOB_STYLE.get(status.job_status, "")),
        f"  {status.duration_ms / 1000:.1f}s  {status.runtime_mode}")
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("Vertex", overflow="fold", min_width=28)
    table.add_column("State")
    table.add_column("Subtasks", justify="right")
    if bars:
        table.add_column("", width=12)
    table.add_column("Records in", justify="right")
    table.add_column("Records out", justify="right")
    for vertex in status.vertices:
        state = vertex.state
        row: list[Any] = [
            vertex.name,
            Text(state.value, _STATE_STYLE.get(state, "")),
            f"{vertex.finished_subtasks}/{vertex.parallelism}",
        ]
        if bars:
            row.append(ProgressBar(total=vertex.parallelism, completed=vertex.finished_subtasks,
                                   width=12))
        row += [f"{vertex.records_in:,}", f"{vertex.records_out:,}"]
        table.add_row(*row)
    return table


class ProgressDisplay:
    """Redraws the table as status documents arrive; the summary is printed at the end."""

    def __init__(self, console: Console | None = None, live: bool | None = None) -> None:
        self.console = console or Console(stderr=True)
        use_live = self.console.is_terminal if live is None else live
        self._live: Live | None = None
        if use_live:
            self._live = Live(console=self.console, auto_refresh=False, transient=True,
                              redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)

    def start(self) -> None:
        if self._live is not None:
            self._live.start()

    def update(self, status: DriverStatusDocument) -> None:
        if self._live is not None:
            self._live.update(render(status), refresh=True)

    def stop(self, status: DriverStatusDocument) -> None:
        if self._live is not None:
            self._live.stop()
        parts: list[object] = [render(status, bars=False)]
        if status.error:
            parts.append(Text(status.error, "red"))
        self.console.print(Group(*parts))  # type: ignore[arg-type]
