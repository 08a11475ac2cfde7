"""The package installed as a user installs it (`pip install .`, not editable), run from a checkout.

The repository root holds a `forensics/` folder without forensics.parsers (that is the root's
parsers/, installed in its place). Python's fork server runs `python -c`, which puts the working
directory first on sys.path: without care its workers import that folder and every input parsed
in them fails (BrokenProcessPool).
"""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs" / "eras"


def _install(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the checkout and a venv with the package installed from it; the dependencies are
    this interpreter's (its site-packages on the venv's path), so nothing is downloaded."""
    src = tmp_path / "checkout"
    skip = shutil.ignore_patterns(
        ".git", "build", "*.egg-info", "__pycache__", "*.so", ".pytest_cache", "forensics-store", "demo-store*", ".venv"
    )
    shutil.copytree(ROOT, src, ignore=skip)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    res = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(src)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    if res.returncode and ("No matching distribution" in res.stderr or "Could not find a version" in res.stderr):
        pytest.skip(f"pip cannot get the build requirements here: {res.stderr.strip().splitlines()[-1]}")
    assert res.returncode == 0, res.stdout + res.stderr
    return src, venv


@pytest.mark.slow
def test_ingest_from_the_checkout_root_parses_in_the_installed_package(tmp_path):
    src, venv = _install(tmp_path)
    inputs = tmp_path / "in"
    inputs.mkdir()
    logs = sorted(SAMPLES.glob("*.log"))[:4]
    assert len(logs) >= 2  # small inputs, more than one: they go to the workers
    for p in logs:
        shutil.copy(p, inputs / p.name)
    res = subprocess.run(
        [str(venv / "bin" / "forensics"), "ingest", str(inputs), "--store", str(tmp_path / "store"), "-j", "2"],
        capture_output=True,
        text=True,
        cwd=src,  # its forensics/ folder is the one the workers must not import
    )
    assert res.returncode == 0, res.stderr
    assert "BrokenProcessPool" not in res.stderr
    listed = subprocess.run(
        [
            str(venv / "bin" / "forensics"),
            "sql",
            "SELECT status, count(*) FROM files GROUP BY ALL",
            "--store",
            str(tmp_path / "store"),
            "--format",
            "csv",
        ],
        capture_output=True,
        text=True,
        cwd=src,
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["status,count_star()", f"ingested,{len(logs)}"]


def test_every_package_of_the_checkout_is_installed():
    """setuptools installs the packages pyproject.toml lists, no others: a new folder left out of the
    list is missing from every non-editable install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for top, name in (("forensics", "forensics"), ("parsers", "forensics.parsers"), ("queries", "forensics.queries")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *rel)))
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
