"""The import contracts (pyproject.toml, [tool.importlinter]): layers import one way, cli down to
core, and the installed package imports nothing of the checkout (tools/, tests/, bench/).

import-linter reads a package from its folder on disk, and parsers/ and queries/ live at the
repository root (installed as forensics.parsers and forensics.queries), so the check runs on the
tree as it installs: the package copied with those two folders put in place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = shutil.which("lint-imports")
pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is a test extra: pip install -e '.[test]'")


def _installed_tree(dest: Path) -> Path:
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.c")
    shutil.copytree(ROOT / "forensics", dest / "forensics", ignore=skip)
    shutil.copytree(ROOT / "parsers", dest / "forensics" / "parsers", ignore=skip)
    shutil.copytree(ROOT / "queries", dest / "forensics" / "queries", ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _lint(tree: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([LINT, "pyproject.toml", "--no-cache"], cwd=tree, env=env, capture_output=True, text=True)


def test_layers_import_one_way(tmp_path):
    res = _lint(_installed_tree(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 kept, 0 broken" in res.stdout


@pytest.mark.parametrize(
    "module, wrong_way",
    [
        ("forensics/parsers/base.py", "from forensics.ingest import sources"),
        ("forensics/parsers/base.py", "from forensics.store import Store"),
        ("forensics/core/schema.py", "from forensics.parsers import lines"),
        ("forensics/analysis/stats.py", "from forensics.reports import render"),
        ("forensics/store/__init__.py", "from forensics.catalog import sql"),
        ("forensics/store/snapshots.py", "from forensics.ingest import sources"),
        # catalog and ingest share a layer and import nothing of each other
        ("forensics/ingest/pipeline.py", "from forensics.catalog import sql"),
        ("forensics/catalog/named.py", "from forensics.ingest import sources"),
        ("forensics/reports/render.py", "from tools import samplegen"),
    ],
)
def test_a_wrong_way_import_breaks_the_contract(tmp_path, module, wrong_way):
    tree = _installed_tree(tmp_path)
    path = tree / module
    path.write_text(path.read_text() + f"\n\ndef _wrong_way():\n    {wrong_way}\n")
    res = _lint(tree)
    assert res.returncode == 1, res.stdout
    assert "BROKEN" in res.stdout and wrong_way.split()[1] in res.stdout
