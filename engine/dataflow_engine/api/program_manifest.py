"""A PyFlink program as a DataflowJob manifest (``dataflow manifest program.py``).

The job is the program's first ``execute()``'s. Its functions are named by reference
(``word_count:split``), so the program travels with the job: a ConfigMap holds its source and
the job's ``pyFiles`` names it, and the driver imports the program as a module for its
functions. That import must not run the job again, so the program's top level may only
define things; what it runs belongs under ``if __name__ == "__main__":``, as in PyFlink's
examples. Functions that cannot be named (lambdas, functions defined inside functions) are
refused, each with its operator, as ``to_manifest()`` refuses them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from dataflow_engine.api.environment import manifest_of
from dataflow_engine.api.scripts import capture_script
from dataflow_engine.errors import SpecError
from dataflow_engine.spec.model import PyFileSpec

#: Top-level statements that only define: importing the program runs nothing else.
_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                ast.Assign, ast.AnnAssign, ast.Pass)


def default_job_name(path: Path) -> str:
    """A DataflowJob name from the program's file name: ``word_count.py`` -> ``word-count``."""
    return re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-")[:63] or "program"


def program_manifest(path: Path, argv: Sequence[str], name: str) -> str:
    """Two YAML documents for ``kubectl apply -f``: the ConfigMap ``<name>-program`` holding
    the program, and the DataflowJob ``name`` of its first execute(), which ships it."""
    _check_import_runs_nothing(path)
    job = capture_script(path, argv)
    code = f"{name}-program"
    spec = job.spec.model_copy(update={"py_files": [
        *job.spec.py_files, PyFileSpec.model_validate({"configMap": code, "key": path.name})]})
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": code},
                  "data": {path.name: path.read_text()}}
    return (yaml.dump(config_map, Dumper=_SourceDumper, sort_keys=False) + "---\n"
            + manifest_of(spec, name))


class _SourceDumper(yaml.SafeDumper):
    """Writes a multi-line string as a literal block, so the program reads as itself."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text,
                                   style="|" if "\n" in text else None)


_SourceDumper.add_representer(str, _text)


def _check_import_runs_nothing(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    for statement in tree.body:
        if isinstance(statement, _DEFINITIONS) or _is_docstring(statement) or _is_main_guard(
                statement):
            continue
        raise SpecError.single(
            f"{path}:{statement.lineno}", "the driver imports the program for its functions, "
            "and this top-level statement would run again there: put what the program runs "
            "under 'if __name__ == \"__main__\":'")


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _is_main_guard(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.If) or statement.orelse:
        return False
    test = statement.test
    return (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and {ast.dump(test.left), ast.dump(test.comparators[0])}
            == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))})
