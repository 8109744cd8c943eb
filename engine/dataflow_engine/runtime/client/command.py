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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataflow_engine.errors import SpecError
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest.endpoints import SAVEPOINTS_PATH, TOKEN_ENV, TOKEN_HEADER
from dataflow_engine.rest.savepoints import SavepointTriggerRequest

if TYPE_CHECKING:
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
    parser.add_argument("--status-port", type=int, default=None,
                        help="serve the execution status as JSON on this port (0: any)")
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
    defaults); a malformed --conf raises SpecError."""
    status_file = getattr(args, "status_file", None)
    return {
        "master": getattr(args, "master", None) or "local[*]",
        "spark_conf": _spark_conf(list(getattr(args, "conf", None) or [])),
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


def add_savepoint_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the running job's status server, e.g. "
                        "http://127.0.0.1:8081 (dataflow run --status-port)")
    parser.add_argument("--stop", action="store_true",
                        help="stop the job once the savepoint completed (Flink's stop "
                             "--savepointPath); it ends FINISHED")
    parser.add_argument("--nonce", default=None,
                        help="an id echoed in the status's savepoint history (default: "
                             "the time)")


def savepoint(args: argparse.Namespace) -> int:
    """Asks a running job for a savepoint; it is taken at the next epoch boundary and shows
    in the status's ``checkpoints.savepoints``."""
    import json
    import time
    import urllib.error
    import urllib.request

    message = SavepointTriggerRequest(nonce=args.nonce or str(int(time.time() * 1000)),
                                      stop=bool(args.stop))
    headers = {"Content-Type": "application/json"}
    if os.environ.get(TOKEN_ENV):
        headers[TOKEN_HEADER] = os.environ[TOKEN_ENV]
    request = urllib.request.Request(f"{args.url.rstrip('/')}{SAVEPOINTS_PATH}",
                                     data=json.dumps(message.to_json()).encode(),
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            print(answer.read().decode())
    except urllib.error.HTTPError as error:
        print(f"dataflow savepoint: {error.read().decode() or error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"dataflow savepoint: {args.url}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
