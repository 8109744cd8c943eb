"""The ``dataflow`` command.

The engine's own subcommands are ``compile``, ``manifest`` and ``run``; other distributions'
subcommands (the operator's ``crd`` and ``operator``) plug in through the ``dataflow.commands``
entry-point group, so the engine never imports Kubernetes code.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path

from dataflow_engine.api.environment import manifest_of
from dataflow_engine.api.program_manifest import default_job_name, program_manifest
from dataflow_engine.api.scripts import capture_script, is_script, run_script
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.policy import JobPolicy, check_policy
from dataflow_engine.compiler.targets import load_target
from dataflow_engine.errors import SpecError
from dataflow_engine.render import Format, Layer
from dataflow_engine.render.json_stream import write_json
from dataflow_engine.render.plan_json import plan_json
from dataflow_engine.render.plan_pictures import plan_dot, plan_mermaid
from dataflow_engine.render.plan_text import plan_text
from dataflow_engine.runtime.client.command import (
    add_run_arguments,
    add_savepoint_arguments,
    report_failure,
    run,
    runner_settings,
    savepoint,
)
from dataflow_engine.runtime.jobmaster.config import JobExecutionError

Command = Callable[[argparse.Namespace], int]
ENTRY_POINT_GROUP = "dataflow.commands"


def _script(target: str) -> Path | None:
    """The program to run as a script, if ``target`` is one (a .py file without ``job``)."""
    path = Path(target)
    return path if path.suffix == ".py" and path.is_file() and is_script(path) else None


def _compile(args: argparse.Namespace) -> int:
    script = _script(args.target)
    if script is not None:
        job = capture_script(script, args.args)
        spec = job.spec
    elif args.args:
        raise SpecError.single(args.target, "only a program run as a script takes "
                               f"arguments, not {args.args}")
    else:
        target = load_target(args.target)
        spec = target.spec
    # What the operator checks before it compiles, with its default settings.
    check_policy(spec, JobPolicy(allowed_images=tuple(args.allowed_images)))
    if script is None:
        job = compile_job(target.spec, target.name)
    layer, fmt = Layer(args.layer), Format(args.format)
    if fmt is Format.JSON:
        write_json(plan_json(job, layer), sys.stdout)
    elif fmt is Format.TEXT:
        print(plan_text(job, layer))
    elif fmt is Format.DOT:
        print(plan_dot(job, layer))
    else:
        print(plan_mermaid(job, layer))
    return 0


def _manifest(args: argparse.Namespace) -> int:
    """``dataflow manifest``: the job as YAML for ``kubectl apply -f`` (a program with the
    ConfigMap that ships it)."""
    script = _script(args.target)
    if script is not None:
        print(program_manifest(script, args.args, args.name or default_job_name(script)),
              end="")
        return 0
    if args.args:
        raise SpecError.single(args.target, "only a program run as a script takes "
                               f"arguments, not {args.args}")
    target = load_target(args.target)
    print(manifest_of(target.spec, args.name or target.name), end="")
    return 0


def _run(args: argparse.Namespace) -> int:
    """``dataflow run``: a PyFlink program runs as python would run it, its execute() calls
    on the command's Spark settings; anything else as the runtime's command runs it."""
    script = _script(args.target)
    if script is None:
        return run(args)
    try:
        settings = runner_settings(args)
        if args.parallelism is not None and args.parallelism < 1:
            raise SpecError.single("--parallelism", f"must be >= 1, not {args.parallelism}")
    except SpecError as error:
        print(f"dataflow run: {error}", file=sys.stderr)
        return 2
    try:
        run_script(script, args.args, settings, args.parallelism)
    except JobExecutionError as error:
        return report_failure(error.result)
    except KeyboardInterrupt:
        print("dataflow run: interrupted", file=sys.stderr)
        return 130
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dataflow", description="Compile and run DataflowJobs: Flink's graphs, on Spark.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    compile_parser = commands.add_parser(
        "compile", help="compile a job and print a graph layer",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Compile FILE.yaml or module:callable through the graph layers.")
    compile_parser.add_argument("target", help="a DataflowJob manifest, FILE.py[:callable], "
                                "module:callable, or a PyFlink program (its first "
                                "execute()'s job)")
    compile_parser.add_argument("--layer", choices=[m.value for m in Layer], default="job",
                                help="the graph layer to print")
    compile_parser.add_argument("--format", choices=[f.value for f in Format], default="text",
                                help="text, the JSON contract (docs/plan-json.md) or a picture")
    compile_parser.add_argument("--allow-image", action="append", dest="allowed_images",
                                default=[], metavar="PREFIX",
                                help="an image prefix the operator allows (as its --allow-image)")
    compile_parser.set_defaults(handler=_compile)

    manifest_parser = commands.add_parser(
        "manifest", help="print a job as a DataflowJob manifest",
        description="Print TARGET as YAML for kubectl apply -f: a PyFlink program's first "
        "execute()'s job, after a ConfigMap holding the program (the job's pyFiles), or the "
        "job of FILE.py[:callable] or module:callable. Functions that cannot be named in a "
        "manifest (lambdas, nested functions) are refused, each with its operator.")
    manifest_parser.add_argument("target", help="a PyFlink program, FILE.py[:callable] or "
                                 "module:callable")
    manifest_parser.add_argument("--name", help="the DataflowJob's name (default: the "
                                 "program's file name, e.g. word-count, or the callable's)")
    manifest_parser.set_defaults(handler=_manifest)

    run_parser = commands.add_parser(
        "run", help="run a job on Spark (embedded local Spark by default)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Run FILE.yaml or module:callable on Spark.")
    add_run_arguments(run_parser)
    run_parser.set_defaults(handler=_run)

    savepoint_parser = commands.add_parser(
        "savepoint", help="ask a running continuous job for a savepoint",
        description="Ask a running continuous job (by its status server) for a savepoint.")
    add_savepoint_arguments(savepoint_parser)
    # The parser reports options that do not go together (--drain without --stop) as usage.
    savepoint_parser.set_defaults(handler=functools.partial(savepoint, parser=savepoint_parser))

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        register: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]
        register = entry.load()
        register(commands)
    return parser


#: Commands whose target may be a PyFlink program: what they do not know is the program's.
_SCRIPT_COMMANDS = ("compile", "manifest", "run")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in _SCRIPT_COMMANDS:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    # A program's arguments, after '--' when they look like the command's own options.
    args.args = extra[1:] if extra[:1] == ["--"] else extra
    handler: Command = args.handler
    try:
        return handler(args)
    except SpecError as exc:
        print(f"error: invalid DataflowJob\n{exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
