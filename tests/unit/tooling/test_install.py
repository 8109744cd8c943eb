"""The clean install: hack/setup's .venv, pinned by constraints.txt (written by hack/lock)."""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[3]


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (REPO_ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins exact versions only: {line!r}"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared.extend(extra)
    return [Requirement(text) for text in declared]


@pytest.mark.unit
def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    pins = _pins()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in constraints.txt: run hack/lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside {requirement}: run hack/lock")


@pytest.mark.unit
def test_the_project_environment_has_exactly_the_pinned_versions() -> None:
    if Path(sys.prefix).resolve() != (REPO_ROOT / ".venv").resolve():
        pytest.skip(f"not running in the project's .venv (hack/setup) but {sys.prefix}")
    wrong = {name: (metadata.version(name), version) for name, version in _pins().items()
             if metadata.version(name) != version}
    assert not wrong, f"installed (found, pinned) differ from constraints.txt: {wrong}"


@pytest.mark.unit
def test_the_scripts_install_and_run_in_the_project_environment() -> None:
    setup = (REPO_ROOT / "hack" / "setup").read_text()
    assert '"$python" -m venv .venv' in setup
    assert '-c constraints.txt -e ".[spark,operator,dev,bench]"' in setup
    assert "-c constraints.txt" in (REPO_ROOT / "Dockerfile").read_text()
    for script in ("test", "demo"):
        lines = (REPO_ROOT / "hack" / script).read_text().splitlines()
        setup = next(i for i, line in enumerate(lines) if line.startswith("hack/setup"))
        assert lines.index(". .venv/bin/activate") == setup + 1
        if "--defer-class-archive" in lines[setup]:  # then the script makes it itself
            assert any("hack/class-archive" in line for line in lines[setup + 1:]), script
    assert "hack/test" in (REPO_ROOT / ".ci" / "run").read_text()
