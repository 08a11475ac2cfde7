"""The suite's own rules (tests/conftest.py): CI runs the README's test command and fails on a skip for
want of what it exists to run; the seed is fixed, replayable and drawn on request; the tiers are
documented where the commands are."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SEED_ENV, seed

PROBE = """
import pytest


@pytest.mark.real_data
def test_reads_the_excerpts():
    pass


def test_skips_for_a_reason_of_its_own():
    pytest.skip("not for want of anything CI provides")
"""


def _probe(tmp_path, **env) -> subprocess.CompletedProcess:
    """The probe run with this suite's conftest and markers, where no real excerpts are."""
    (tmp_path / "tests").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests" / "test_probe.py").write_text(PROBE)
    env = {**os.environ, "FORENSICS_REAL_DATA": str(tmp_path / "nowhere"), **env}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "tests"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_a_skip_for_want_of_real_data_fails_in_ci_and_other_skips_say_why(tmp_path):
    outside = _probe(tmp_path / "dev", FORENSICS_CI="0")
    assert outside.returncode == 0, outside.stdout + outside.stderr
    assert "2 skipped" in outside.stdout
    assert "the real excerpts are not present" in outside.stdout  # -rs: every skip with its reason
    assert "not for want of anything CI provides" in outside.stdout
    ci = _probe(tmp_path / "ci", FORENSICS_CI="1")
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert "1 skipped" in ci.stdout and "1 error" in ci.stdout
    assert "FORENSICS_CI=1: CI must run this test, not skip it" in ci.stdout


def test_the_seed_is_fixed_replayed_or_drawn(monkeypatch):
    monkeypatch.delenv(SEED_ENV, raising=False)
    assert seed(17) == 17
    monkeypatch.setenv(SEED_ENV, "4242")
    assert seed(17) == 4242 and seed(3) == 4242
    monkeypatch.setenv(SEED_ENV, "random")
    drawn = seed(17)
    # drawn once, then kept where xdist workers and subprocesses read it
    assert os.environ[SEED_ENV] == str(drawn) and seed(3) == drawn
    monkeypatch.setenv(SEED_ENV, "seven")
    with pytest.raises(pytest.UsageError, match="give a number, or random"):
        seed(17)


def test_ci_lints_then_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```sh\n(.*?)```", readme, re.S).group(1).splitlines()
    assert [ln.split("#")[0].strip() for ln in first[:2]] == ["make demo", "make test"]
    assert "(what CI runs)" in first[1]
    for target in ("check", "lint"):
        assert f"make {target}" in readme, f"README.md does not say what `make {target}` does"
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in run.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert "set -euo pipefail" in lines
    assert lines[-2:] == ["make lint", "make test"], "CI ends with the lint and the README's test command"
    assert "export FORENSICS_CI=1" in lines and "export FORENSICS_REQUIRE_NATIVE=1" in lines
    assert "||" not in lines[-1] and "true" not in lines[-1]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("test", "check", "lint"):
        assert re.search(rf"^{target}: install$", makefile, re.M), target


def _make_n(tmp_path, target, in_venv, *args, env=None):
    """`make -n TARGET` with a python3 stub that answers whether it runs in a virtual environment, and
    VENV a folder that does not exist yet (written VENV in the output)."""
    import os
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("no make")
    stub = tmp_path / "python3"
    stub.write_text(f"#!/bin/sh\necho {int(in_venv)}\n")
    stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PY", "STORE")} | (env or {})
    out = subprocess.run(
        ["make", "-n", target, f"SYSTEM_PY={stub}", f"VENV={tmp_path / 'venv'}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    return stub, out.replace(str(tmp_path / "venv"), "VENV")


@pytest.mark.parametrize("in_venv", [True, False])
def test_make_installs_into_a_venv_unless_one_is_active(tmp_path, in_venv):
    """Whatever python make finds (Debian's, pyenv's, conda's), it makes .venv and installs there,
    unless a virtual environment is active: then it installs into that one."""
    stub, out = _make_n(tmp_path, "install", in_venv)
    if in_venv:
        assert "-m venv" not in out and f"{stub} -m pip install -q -e '.[test]'" in out
    else:
        assert f"{stub} -m venv VENV" in out and "VENV/bin/python -m pip install -q -e '.[test]'" in out


def test_make_py_names_the_interpreter(tmp_path):
    _, out = _make_n(tmp_path, "install", False, "PY=/opt/py/bin/python")
    assert "-m venv" not in out and "/opt/py/bin/python -m pip install -q -e '.[test]'" in out


def test_the_demo_installs_no_test_extras_and_has_a_store_of_its_own(tmp_path):
    _, out = _make_n(tmp_path, "demo", False)
    assert "VENV/bin/python -m pip install -q -e .\n" in out and "[test]" not in out
    assert "ingest sample_logs/incident --store demo-store\n" in out
    assert "forensics-store" not in out
    _, out = _make_n(tmp_path, "test", False)
    assert "VENV/bin/python -m pip install -q -e '.[test]'" in out


def test_the_longest_modules_go_first_each_in_its_own_order():
    from types import SimpleNamespace

    from tests.conftest import modules_by_weight
    from tests.slowlist import weights_of

    ids = ["tests/a.py::t1", "tests/b.py::t1", "tests/a.py::t2", "tests/c.py::t1", "tests/b.py::t2", "tests/new.py::t"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    weights = weights_of(
        [(1.0, "call", "tests/a.py::t1"), (2.5, "setup", "tests/a.py::t2"), (9.0, "call", "tests/b.py::t1")]
    )
    weights["tests/c.py"] = 0.1
    assert weights["tests/a.py"] == 3.5
    assert [i.nodeid for i in modules_by_weight(items, weights)] == [
        "tests/new.py::t",  # not measured yet: it may be long
        "tests/b.py::t1",
        "tests/b.py::t2",
        "tests/a.py::t1",
        "tests/a.py::t2",
        "tests/c.py::t1",
    ]


def test_the_weights_name_modules_of_the_suite():
    from tests.slowlist import WEIGHTS

    listed = [line.split(None, 1)[1] for line in WEIGHTS.read_text().splitlines() if not line.startswith("#")]
    gone = [m for m in listed if not (ROOT / m).exists()]
    assert not gone, f"tests/weights.txt names modules that are gone: {gone} (python -m tests.slowlist --weights)"
