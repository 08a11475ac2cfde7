"""Where the environment requires the native modules (FORENSICS_REQUIRE_NATIVE=1, as .ci/run sets),
both are built and used: otherwise tests/test_native.py and tests/test_trace_fast.py would skip
every comparison and pass. And wherever they are used, they come from forensics/core/native.py."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from forensics.core import native
from forensics.parsers import lines, transfer_trace
from forensics.parsers import native as scanner

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULES = sorted(native.MODULES)

required = pytest.mark.skipif(
    not native.required(), reason="FORENSICS_REQUIRE_NATIVE=1 not set: installs without a compiler are allowed"
)


@required
@pytest.mark.parametrize("name", MODULES)
def test_each_native_module_is_built_and_enabled(name):
    assert native.built(name) is not None, native.why_not(name)
    assert native.enabled(name), native.why_not(name)


@required
@pytest.mark.parametrize("name", MODULES)
def test_the_build_loaded_is_the_one_asked_for(name):
    """`make sanitize` loads builds with sanitizers in place of the installed ones."""
    want = os.environ.get(native.override_var(name)) or native.installed(name)
    assert os.path.samefile(native.built(name).__file__, want)


@required
def test_the_parsers_use_the_modules_the_loader_gives():
    assert scanner._fastlog is native.built("_fastlog")
    assert transfer_trace._fasttrace is native.built("_fasttrace")
    assert lines.count_newlines is native.built("_fastlog").count_newlines


def _status(env: dict) -> dict:
    code = "import json; from forensics.core import native; print(json.dumps(native.status()))"
    base = {k: v for k, v in os.environ.items() if not k.startswith("FORENSICS_")}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_a_module_that_does_not_load_says_why(tmp_path):
    bad = tmp_path / "_fasttrace.so"
    bad.write_bytes(b"not a shared object")
    status = _status({"FORENSICS_FASTTRACE": str(bad)})
    assert status["_fasttrace"].startswith(f"forensics.parsers._fasttrace does not load from {bad}: ")
    assert status["_fastlog"] != status["_fasttrace"]


def test_switched_off_says_so():
    status = _status({"FORENSICS_NATIVE": "0"})
    for name in MODULES:
        assert "FORENSICS_NATIVE=0" in status[name] or "is not built" in status[name], status[name]


def test_only_the_loader_reads_the_native_settings():
    """FORENSICS_NATIVE and the override paths are read in one place, forensics/core/native.py."""
    names = ["FORENSICS_NATIVE", *(native.override_var(m) for m in MODULES)]
    alt = "|".join(names)
    pattern = re.compile(rf"""(?:environ\.get\(|environ\[|getenv\()\s*["']({alt})["']""")
    readers = [
        str(p.relative_to(ROOT))
        for d in ("forensics", "parsers")
        for p in sorted((ROOT / d).rglob("*.py"))
        if pattern.search(p.read_text())
    ]
    assert readers == ["forensics/core/native.py"]
