"""A PyFlink program as a DataflowJob manifest (``dataflow manifest program.py``).

The job is the program's first ``execute()``'s. Its functions are named by reference
(``word_count:split``), so the program travels with the job: a ConfigMap holds its source and
the job's ``pyFiles`` names it, and the driver imports the program as a module for its
functions. That import must not run the job again, so the program's top level may not call
``execute()`` or one of its own functions: what it runs belongs under
``if __name__ == "__main__":``, as in PyFlink's examples; and it may not import modules beside
it, which the manifest does not ship. Functions that cannot be named (lambdas, functions
defined inside functions) are refused, each with its operator, as ``to_manifest()`` refuses
them.
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

#: Methods that run a job: a program's import must not call them.
_RUNS_A_JOB = frozenset({"execute", "execute_async", "execute_and_collect"})
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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
    """Refuses a program whose import would run a job (its top level calls ``execute()`` or
    one of its own functions, such as ``main()``) or import a module beside it, which the
    manifest does not ship."""
    tree = ast.parse(path.read_text(), str(path))
    functions = {node.name for node in tree.body if isinstance(node, _DEFINITIONS[:2])}
    for statement in tree.body:
        if isinstance(statement, _DEFINITIONS) or _is_main_guard(statement):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and _runs_a_job(node.func, functions):
                raise SpecError.single(
                    f"{path}:{node.lineno}", "the driver imports the program for its "
                    "functions, and this top-level call would run again there: put what the "
                    "program runs under 'if __name__ == \"__main__\":'")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        local = _local_import(node, path.parent)
        if local is not None:
            raise SpecError.single(
                f"{path}:{node.lineno}", f"the program imports {local!r} from beside it, and "
                "the manifest ships the program alone: ship that module too (spec.pyFiles) "
                "or install it in the image")


def _runs_a_job(function: ast.expr, functions: set[str]) -> bool:
    if isinstance(function, ast.Attribute):
        return function.attr in _RUNS_A_JOB
    return isinstance(function, ast.Name) and function.id in functions


def _local_import(node: ast.Import | ast.ImportFrom, directory: Path) -> str | None:
    """The module beside the program that an import statement names, if any."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return "." * node.level + (node.module or "")
        names = [node.module or ""]
    else:
        names = [alias.name for alias in node.names]
    for name in names:
        top = name.partition(".")[0]
        if (directory / f"{top}.py").is_file() or (directory / top / "__init__.py").is_file():
            return name
    return None


def _is_main_guard(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.If) or statement.orelse:
        return False
    test = statement.test
    return (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and {ast.dump(test.left), ast.dump(test.comparators[0])}
            == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))})
