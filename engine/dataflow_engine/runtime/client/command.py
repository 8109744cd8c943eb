"""``dataflow run FILE.yaml | FILE.py[:callable] | module:callable``: run a job on Spark.

Targets are loaded by :func:`dataflow_engine.compiler.targets.load_target` (as ``dataflow compile``
does). Exit codes: 0 when the job FINISHED; 1 when it FAILED, with the error (operator,
subtask, original exception and its traceback) on stderr; 2 when the job cannot be loaded or
compiled; 130 when interrupted (the Spark jobs are cancelled first).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.error
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataflow_engine.errors import SpecError
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest.endpoints import (
    SAVEPOINTS_PATH,
    STATUS_PATH,
    TOKEN_ENV,
    TOKEN_HEADER,
)
from dataflow_engine.rest.savepoints import SavepointEntry, SavepointTriggerRequest

if TYPE_CHECKING:
    from dataflow_engine.rest.status import DriverStatusDocument
    from dataflow_engine.runtime.jobmaster.config import JobExecutionResult


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="a DataflowJob manifest, FILE.py[:callable], "
                        "module:callable, or a PyFlink program (a script that calls "
                        "env.execute()), run as python would run it")
    parser.add_argument("-p", "--parallelism", type=int, default=None, metavar="N",
                        help="a PyFlink program's default parallelism, for its jobs that set "
                             "none (Flink's run -p; default: the cores)")
    parser.add_argument("--master", default="local[*]",
                        help="Spark master: local[N] (default local[*]), k8s://..., ...")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark configuration property (repeatable)")
    parser.add_argument("--properties-file", default=None, metavar="FILE",
                        help="Spark settings in spark-defaults.conf's format, as spark-submit "
                             "--properties-file (default: $SPARK_CONF_DIR/spark-defaults.conf)")
    parser.add_argument("--status-port", type=int, default=None,
                        help="serve the execution status as JSON on this port (0: any; the "
                             "port is logged, and written to a status-port file beside the "
                             "status file or in a local checkpoint storage)")
    parser.add_argument("--status-host", default="127.0.0.1", metavar="ADDRESS",
                        help="the address the status server listens on (default loopback; "
                             "0.0.0.0 in a driver pod)")
    parser.add_argument("--status-file", default=None,
                        help="also write the execution status to this file")
    parser.add_argument("--status-linger", type=float, default=0.0, metavar="SECONDS",
                        help="keep serving the final status this long after the job ends")
    parser.add_argument("--no-progress", action="store_true",
                        help="no live progress display (the summary table is still printed)")
    parser.add_argument("--restore", default="latest", metavar="latest|none|PATH",
                        help="where a continuous job starts: the newest checkpoint in its "
                             "storage (if any), from scratch, or a checkpoint or savepoint "
                             "directory (Flink's --fromSavepoint)")
    parser.add_argument("--allow-non-restored-state", action="store_true",
                        help="drop state of operators the job no longer has instead of "
                             "refusing the restore")
    parser.add_argument("--deployment", default="", metavar="ID",
                        help="an id for this deployment, stamped on its checkpoints: a driver "
                             "restarted with the same id resumes from its own newest "
                             "checkpoint instead of --restore (the operator sets it)")
    parser.add_argument("--py-files", action="append", default=[], metavar="PATH|URL",
                        help="a .py, .zip or .egg (or a directory of them) for the Python path "
                             "of the driver and every executor, as spark-submit --py-files "
                             "(repeatable)")


def _spark_conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SpecError.single("--conf", f"{pair!r}: expected KEY=VALUE")
        conf[key.strip()] = value
    return conf


def runner_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The RunnerConfig settings of ``dataflow run``'s options (missing ones take their
    defaults); a malformed --conf or a missing --properties-file raises SpecError."""
    status_file = getattr(args, "status_file", None)
    properties_file = getattr(args, "properties_file", None)
    if properties_file and not Path(properties_file).is_file():
        raise SpecError.single("--properties-file", f"{properties_file}: no such file")
    return {
        "master": getattr(args, "master", None) or "local[*]",
        "spark_conf": _spark_conf(list(getattr(args, "conf", None) or [])),
        "properties_file": Path(properties_file) if properties_file else None,
        "status_port": getattr(args, "status_port", None),
        "status_host": getattr(args, "status_host", None) or "127.0.0.1",
        "status_token": os.environ.get(TOKEN_ENV) or None,
        "status_file": Path(status_file) if status_file else None,
        "status_linger": float(getattr(args, "status_linger", 0.0) or 0.0),
        "py_files": list(getattr(args, "py_files", None) or []),
        "restore": getattr(args, "restore", None) or "latest",
        "allow_non_restored_state": bool(getattr(args, "allow_non_restored_state", False)),
        "deployment": getattr(args, "deployment", None) or "",
        "progress": True,
        "progress_live": False if getattr(args, "no_progress", False) else None,
    }


def run(args: argparse.Namespace) -> int:
    """Runs ``args.target``; ``args`` as built by :func:`add_run_arguments` (missing optional
    attributes take their defaults)."""
    from dataflow_engine.compiler.compile import compile_job
    from dataflow_engine.compiler.targets import load_target
    from dataflow_engine.runtime.jobmaster.config import RunnerConfig
    from dataflow_engine.runtime.jobmaster.runner import run_job

    try:
        if getattr(args, "args", None):
            raise SpecError.single(args.target, "only a program run as a script takes "
                                   f"arguments, not {args.args}")
        if getattr(args, "parallelism", None) is not None:
            raise SpecError.single("--parallelism", "is a PyFlink program's default; a job's "
                                   "own is spec.parallelism")
        target = load_target(args.target)
        compiled = compile_job(target.spec, target.name)
        config = RunnerConfig(**runner_settings(args))
    except (SpecError, OSError) as error:
        print(f"dataflow run: {error}", file=sys.stderr)
        return 2
    try:
        result = run_job(compiled, config)
    except KeyboardInterrupt:
        print("dataflow run: interrupted", file=sys.stderr)
        return 130
    if result.job_status is JobStatus.FINISHED:
        return 0
    return report_failure(result)


def report_failure(result: JobExecutionResult) -> int:
    """What ``dataflow run`` says of a job that did not finish (on stderr); its exit code."""
    print(f"dataflow run: job {result.job_name} {result.job_status.value}: {result.error}",
          file=sys.stderr)
    if result.failure is not None:
        print(result.failure.traceback.rstrip(), file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m dataflow_engine.runtime.client.command``."""
    parser = argparse.ArgumentParser(prog="dataflow run", description=__doc__.splitlines()[0])
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    args.args = []
    return run(args)


#: How long ``dataflow savepoint --wait`` waits by default (seconds).
DEFAULT_WAIT_TIMEOUT = 600.0
#: Seconds between two reads of the status document while waiting: a driver that stops with
#: its savepoint serves its last document only briefly (about a second), so poll well within.
WAIT_INTERVAL = 0.2
#: Failed reads in a row after which the driver counts as gone (one may be a hiccup).
_UNREACHABLE_READS = 3


def add_savepoint_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the running job's status server, e.g. "
                        "http://127.0.0.1:8081 (dataflow run --status-port; a driver started "
                        "with --status-port 0 writes its port to a status-port file)")
    parser.add_argument("--stop", action="store_true",
                        help="stop the job once the savepoint completed (Flink's stop "
                             "--savepointPath); it ends FINISHED")
    parser.add_argument("--drain", action="store_true",
                        help="with --stop: send the maximum watermark through the job first, "
                             "so that its windows and event-time timers fire (Flink's stop "
                             "--drain)")
    parser.add_argument("--checkpoint", action="store_true",
                        help="take a checkpoint (the next epoch's, in the checkpoint storage, "
                             "retained as checkpoints are) rather than a savepoint")
    parser.add_argument("--nonce", default=None,
                        help="an id echoed in the status's savepoint history (default: "
                             "the time)")
    parser.add_argument("--wait", action="store_true",
                        help="wait until the driver took it, then print its path alone on "
                             "stdout (exit 1, saying why, if it failed)")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help=f"with --wait: give up after this long (default "
                             f"{DEFAULT_WAIT_TIMEOUT:g})")


class SavepointWaitError(RuntimeError):
    """Why waiting for a savepoint ended without one; the message is for people."""


def _savepoint_problem(args: argparse.Namespace) -> str | None:
    """Options that do not go together (argparse cannot say so itself)."""
    stop = bool(getattr(args, "stop", False))
    if getattr(args, "drain", False) and not stop:
        return "--drain ends the job's event time: it needs --stop"
    if getattr(args, "checkpoint", False) and stop:
        return "--checkpoint takes a checkpoint, which never stops the job: not with --stop"
    if getattr(args, "timeout", None) is not None and not getattr(args, "wait", False):
        return "--timeout bounds --wait: not without it"
    if getattr(args, "timeout", None) is not None and args.timeout <= 0:
        return f"--timeout must be positive, not {args.timeout:g}"
    return None


def read_status(url: str, timeout: float = 10.0) -> DriverStatusDocument:
    """The status document a driver serves at ``url`` (its status server's base URL).

    Raises OSError when the driver cannot be reached (urllib's HTTPError when it answers with
    an error) and ValueError when its answer is not a status document this side reads."""
    import json
    import urllib.request

    from dataflow_engine.rest.status import parse_status

    with urllib.request.urlopen(f"{url.rstrip('/')}{STATUS_PATH}", timeout=timeout) as answer:
        body = answer.read()
    try:
        document = parse_status(json.loads(body))
    except ValueError:
        document = None
    if document is None:
        raise ValueError(f"{url}{STATUS_PATH} is not a status document of this protocol "
                         "version")
    return document


def wait_for_savepoint(url: str, nonce: str, timeout: float = DEFAULT_WAIT_TIMEOUT, *,
                       seen: Collection[SavepointEntry] = (), interval: float = WAIT_INTERVAL,
                       what: str = "savepoint") -> SavepointEntry:
    """Polls the driver's status document until it lists the outcome of the request
    ``nonce`` (an entry not among ``seen``, those it listed before the request); returns the
    completed entry.

    Raises :class:`SavepointWaitError` when the entry says it failed, when the job ended
    without it, when the driver stops answering (a stop-with-savepoint's driver goes away soon
    after its entry shows; one that went before it did cannot say how it ended), and after
    ``timeout`` seconds. ``what`` names it in those messages (a triggered checkpoint's
    outcome is listed the same way)."""
    deadline = time.monotonic() + timeout
    failed_reads = 0
    while True:
        remaining = deadline - time.monotonic()
        try:
            document = read_status(url, timeout=max(0.1, min(5.0, remaining)))
        except urllib.error.HTTPError as error:
            raise SavepointWaitError(f"{url}{STATUS_PATH}: {error}") from None
        except OSError as error:
            failed_reads += 1
            if failed_reads >= _UNREACHABLE_READS:
                raise SavepointWaitError(
                    f"the driver at {url} stopped answering ({_reason(error)}) before "
                    f"{what} {nonce!r} showed in its status; whether it was taken is in "
                    "the driver's log") from None
        except ValueError as error:
            raise SavepointWaitError(str(error)) from None
        else:
            failed_reads = 0
            entry = _new_entry(document, nonce, seen)
            if entry is not None:
                if entry.error is not None:
                    reason = f" ({entry.reason})" if entry.reason is not None else ""
                    raise SavepointWaitError(f"{entry.error}{reason}")
                return entry
            if document.job_status.is_globally_terminal:
                error_text = f": {document.error}" if document.error else ""
                raise SavepointWaitError(f"the job ended {document.job_status}{error_text} "
                                         f"before {what} {nonce!r} was taken")
        if time.monotonic() + interval > deadline:
            raise SavepointWaitError(
                f"{what} {nonce!r} was not taken within {timeout:g} s (the job takes it at "
                "its next epoch boundary; the request stays queued)")
        time.sleep(interval)


def _new_entry(document: DriverStatusDocument, nonce: str,
               seen: Collection[SavepointEntry]) -> SavepointEntry | None:
    if document.checkpoints is None:
        return None
    return next((entry for entry in reversed(document.checkpoints.savepoints)
                 if entry.nonce == nonce and entry not in seen), None)


def _refusal(error: urllib.error.HTTPError) -> str:
    """The driver's reason for refusing a request (its ErrorResponse), else its whole answer."""
    import json

    body = error.read().decode(errors="replace")
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("error"), str):
        return f"{document['error']} (HTTP {error.code})"
    return body or str(error)


def _reason(error: OSError) -> str:
    """urllib wraps the socket's error; its reason is what a person reads."""
    reason = getattr(error, "reason", None)
    return str(reason if reason is not None else error)


def savepoint(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """Asks a running job for a savepoint; it is taken at the next epoch boundary and shows
    in the status's ``checkpoints.savepoints``. With ``--wait``, waits for it there and
    prints its path, so that a script can use it (``path=$(dataflow savepoint --wait URL)``).

    ``parser`` reports options that do not go together as argparse does (exit 2)."""
    import json
    import urllib.request

    problem = _savepoint_problem(args)
    if problem is not None:
        if parser is not None:
            parser.error(problem)
        print(f"dataflow savepoint: {problem}", file=sys.stderr)
        return 2
    wait = bool(getattr(args, "wait", False))
    message = SavepointTriggerRequest(
        nonce=args.nonce or str(int(time.time() * 1000)), stop=bool(args.stop),
        drain=bool(getattr(args, "drain", False)),
        kind="checkpoint" if getattr(args, "checkpoint", False) else "savepoint")
    seen: tuple[SavepointEntry, ...] = ()
    if wait:  # what the driver listed before, in case the nonce was used already
        try:
            before = read_status(args.url)
        except (OSError, ValueError) as error:
            problem = _reason(error) if isinstance(error, OSError) else str(error)
            print(f"dataflow savepoint: {args.url}: {problem}", file=sys.stderr)
            return 1
        if before.checkpoints is not None:
            seen = before.checkpoints.savepoints
    headers = {"Content-Type": "application/json"}
    if os.environ.get(TOKEN_ENV):
        headers[TOKEN_HEADER] = os.environ[TOKEN_ENV]
    request = urllib.request.Request(f"{args.url.rstrip('/')}{SAVEPOINTS_PATH}",
                                     data=json.dumps(message.to_json()).encode(),
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            accepted = answer.read().decode()
    except urllib.error.HTTPError as error:
        print(f"dataflow savepoint: {_refusal(error)}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"dataflow savepoint: {args.url}: {_reason(error)}", file=sys.stderr)
        return 1
    if not wait:
        print(accepted)
        return 0
    what = "checkpoint" if message.kind == "checkpoint" else "savepoint"
    print(f"dataflow savepoint: {args.url} took the request for a {what} ({message.nonce!r}); "
          "waiting for the next epoch boundary", file=sys.stderr)
    timeout = args.timeout if getattr(args, "timeout", None) is not None else (
        DEFAULT_WAIT_TIMEOUT)
    try:
        entry = wait_for_savepoint(args.url, message.nonce, timeout, seen=seen, what=what)
    except SavepointWaitError as error:
        print(f"dataflow savepoint: {error}", file=sys.stderr)
        return 1
    if entry.path is None:  # a checkpoint of a job that keeps them in memory
        print(f"dataflow savepoint: {what} {entry.checkpoint_id} was taken and is kept in the "
              "driver's memory (the job has no checkpoint storage)", file=sys.stderr)
    else:
        print(entry.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
