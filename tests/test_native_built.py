"""Where the environment requires the native scanner (FORENSICS_REQUIRE_NATIVE=1, as .ci/run sets),
it is built and used: otherwise tests/test_native.py would skip every comparison and pass."""

import os

import pytest

from forensics.parsers import native

required = pytest.mark.skipif(
    os.environ.get("FORENSICS_REQUIRE_NATIVE") != "1",
    reason="FORENSICS_REQUIRE_NATIVE=1 not set: installs without a compiler are allowed",
)


@required
def test_the_native_scanner_is_built_and_enabled():
    assert native.import_error is None, (
        f"forensics.parsers._fastlog does not import ({native.import_error}): parsers/_fastlog.c was not built; "
        "reinstall with `FORENSICS_REQUIRE_NATIVE=1 pip install -e .` to see the compiler's error"
    )
    assert native.enabled(), "FORENSICS_NATIVE=0 turns the native scanner off where it is required"


@required
def test_the_scanner_built_is_the_one_asked_for():
    """`make sanitize` loads a build with sanitizers in place of the installed one."""
    want = os.environ.get("FORENSICS_FASTLOG")
    if want:
        assert os.path.samefile(native._fastlog.__file__, want)
