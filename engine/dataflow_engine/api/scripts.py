"""PyFlink programs as scripts, for the ``dataflow`` command.

A PyFlink program is a script that builds its job and calls ``env.execute()`` (often more
than once, printing between). ``dataflow run program.py ARGS`` runs it as ``python program.py
ARGS`` would, with every ``execute()`` on the command's Spark settings (master, status
server, progress); ``dataflow compile program.py`` runs it up to its first ``execute()`` and
takes that job instead of running it.
"""

from __future__ import annotations

import ast
import contextlib
import runpy
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.errors import SpecError

#: RunnerConfig settings of ``dataflow run`` for the script it runs (every execute() uses them).
RUNNER_SETTINGS: ContextVar[dict[str, Any] | None] = ContextVar("runner_settings", default=None)
#: Set by ``dataflow compile``: execute() hands its compiled job here instead of running it.
CAPTURING: ContextVar[bool] = ContextVar("capturing", default=False)
#: ``dataflow run -p``: the parallelism of the script's jobs where they set none (Flink's
#: ``flink run -p``), instead of the cores.
DEFAULT_PARALLELISM: ContextVar[int | None] = ContextVar("default_parallelism", default=None)


class JobCaptured(BaseException):
    """Ends a script at its first execute() (a BaseException, so ``except Exception`` in the
    script does not swallow it)."""

    def __init__(self, job: CompiledJob) -> None:
        super().__init__(job.job_name)
        self.job = job


def is_script(path: Path, callable_name: str = "job") -> bool:
    """A file without a top-level ``callable_name`` (function, class or assignment) is a
    script: it builds and runs its job when run, as PyFlink programs do."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError) as error:
        raise SpecError.single(str(path), f"cannot read the program: {error}") from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == callable_name:
                return False
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == callable_name for t in targets):
                return False
    return True


def run_script(path: Path, argv: Sequence[str], runner_settings: dict[str, Any],
               parallelism: int | None = None) -> None:
    """Runs the script as ``__main__`` with ``argv`` as its arguments, its jobs with
    ``parallelism`` where they set none; what it raises (a JobExecutionError of a failed job)
    propagates."""
    settings = RUNNER_SETTINGS.set(runner_settings)
    default = DEFAULT_PARALLELISM.set(parallelism)
    try:
        with _as_main(path, argv):
            runpy.run_path(str(path), run_name="__main__")
    finally:
        DEFAULT_PARALLELISM.reset(default)
        RUNNER_SETTINGS.reset(settings)


def capture_script(path: Path, argv: Sequence[str] = ()) -> CompiledJob:
    """The job of the script's first execute(), which does not run. What the script prints
    goes to stderr, so that stdout holds only what the command makes of the job."""
    token = CAPTURING.set(True)
    try:
        with _as_main(path, argv), contextlib.redirect_stdout(sys.stderr):
            runpy.run_path(str(path), run_name="__main__")
    except JobCaptured as captured:
        return captured.job
    finally:
        CAPTURING.reset(token)
    raise SpecError.single(str(path), "the program ended without calling execute(): it "
                           "defines no job")


@contextmanager
def _as_main(path: Path, argv: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` and ``sys.path`` as ``python path argv...`` has them."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
