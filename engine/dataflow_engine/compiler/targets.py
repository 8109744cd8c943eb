"""What the CLI accepts as a job: a manifest file, or ``module:callable`` building one in Python."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from dataflow_engine.compiler.manifest import load_manifest
from dataflow_engine.compiler.validation import validate_spec
from dataflow_engine.errors import SpecError
from dataflow_engine.functions.references import is_function_ref
from dataflow_engine.spec.model import DataflowJob, DataflowJobSpec


@dataclass(frozen=True)
class JobTarget:
    name: str
    spec: DataflowJobSpec


def load_target(target: str) -> JobTarget:
    """Loads ``FILE.yaml``, ``FILE.py[:callable]`` (default ``job``) or ``module:callable``.

    The callable takes no arguments and returns a DataflowJob, a DataflowJobSpec, or anything
    with ``build_job(name)`` (a StreamExecutionEnvironment). The current directory is importable.
    """
    script, _, function = target.partition(":")
    path = Path(script)
    if path.suffix == ".py":
        # A Python file: its directory becomes importable, as when running the script.
        sys.path.insert(0, str(path.resolve().parent))
        module_name, attribute = path.stem, function or "job"
    elif path.suffix in (".yaml", ".yml", ".json") or Path(target).exists():
        job = load_manifest(Path(target))
        return JobTarget(job.metadata.name, job.spec)
    elif is_function_ref(target):
        module_name, attribute = target.split(":")
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))
    else:
        raise SpecError.single(target, "expected a manifest file, FILE.py[:callable] or "
                               "'module:callable'")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise SpecError.single(target, f"cannot load job: {exc}") from None
    built = factory()
    default_name = module_name.rsplit(".", 1)[-1].replace("_", "-")
    if isinstance(built, DataflowJob):
        return JobTarget(built.metadata.name, built.spec)
    if isinstance(built, DataflowJobSpec):
        validate_spec(built)
        return JobTarget(default_name, built)
    build_job = getattr(built, "build_job", None)
    if callable(build_job):
        job = build_job(default_name)
        assert isinstance(job, DataflowJob)
        return JobTarget(job.metadata.name, job.spec)
    raise SpecError.single(target, f"returned {type(built).__name__}; expected a "
                           "StreamExecutionEnvironment, a DataflowJob or a DataflowJobSpec")
