"""The import contracts of pyproject.toml ([tool.importlinter]) checked on the package as it installs.

    python -m tools.lint_imports        (what `make lint` runs; tests/test_layers.py uses the same functions)

import-linter reads a package from its folder on disk, and parsers/ and queries/ live at the
repository root (installed as forensics.parsers and forensics.queries), so the check runs on a copy
of the tree as it installs: the package with those two folders put in place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint_imports() -> str | None:
    """The lint-imports command of this interpreter's environment (a test extra), else the one on PATH."""
    beside = Path(sys.executable).parent / "lint-imports"
    return str(beside) if beside.is_file() else shutil.which("lint-imports")


def installed_tree(dest: Path) -> Path:
    """The package as it installs, copied into `dest`, with pyproject.toml beside it."""
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.c")
    shutil.copytree(ROOT / "forensics", dest / "forensics", ignore=skip)
    shutil.copytree(ROOT / "parsers", dest / "forensics" / "parsers", ignore=skip)
    shutil.copytree(ROOT / "queries", dest / "forensics" / "queries", ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def lint(tree: Path) -> subprocess.CompletedProcess:
    """lint-imports run on a tree that `installed_tree` made."""
    exe = lint_imports()
    if exe is None:
        raise FileNotFoundError("lint-imports is not installed: it is a test extra (pip install -e '.[test]')")
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([exe, "pyproject.toml", "--no-cache"], cwd=tree, env=env, capture_output=True, text=True)


def main() -> int:
    try:
        with tempfile.TemporaryDirectory() as d:
            res = lint(installed_tree(Path(d)))
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(res.stdout)
    sys.stderr.write(res.stderr)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
