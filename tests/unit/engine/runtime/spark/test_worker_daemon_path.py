"""Which archives the worker daemon leaves off ``sys.path``: those without Python, and copies
of packages installed in a directory with the same version; never another version."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from dataflow_engine.runtime.spark.worker_daemon import leave_out, redundant_archives

pytestmark = pytest.mark.unit


def _zip(path: Path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return str(path)


def test_archives_without_python_and_copies_of_installed_packages_go(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    (site / "pkg" / "version.py").write_text("__version__ = '1.0'\n")
    jar = _zip(tmp_path / "core.jar", {"org/apache/Thing.class": "", "META-INF/x": ""})
    copy = _zip(tmp_path / "pkg.zip", {"pkg/__init__.py": "",
                                       "pkg/version.py": "__version__ = '1.0'\n"})
    other = _zip(tmp_path / "other.zip", {"pkg/__init__.py": "",
                                          "pkg/version.py": "__version__ = '2.0'\n"})
    alone = _zip(tmp_path / "alone.zip", {"alone/__init__.py": ""})
    path = [copy, other, alone, jar, str(site), str(tmp_path / "missing.zip")]
    assert redundant_archives(path) == {jar, copy}


def test_leaving_out_drops_the_entries_and_their_cached_importers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = _zip(tmp_path / "core.jar", {"org/Thing.class": ""})
    monkeypatch.setattr(sys, "path", [jar, str(tmp_path)])
    monkeypatch.setattr(sys, "path_importer_cache", {jar: None, f"{jar}/org": None,
                                                     str(tmp_path): None})
    leave_out({jar})
    assert sys.path == [str(tmp_path)]
    assert list(sys.path_importer_cache) == [str(tmp_path)]
