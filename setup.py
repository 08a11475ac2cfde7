"""Only the native scanners live here (server logs, transfer traces); everything else is in pyproject.toml.

Without a C compiler the install still succeeds (`optional`) and the polars path parses every line
(slower, same tables; see parsers/native.py). With FORENSICS_REQUIRE_NATIVE=1 (CI) a scanner that
does not build fails the install instead of leaving a slower one behind.
"""

import os

from setuptools import Extension, setup

required = os.environ.get("FORENSICS_REQUIRE_NATIVE") == "1"
setup(
    ext_modules=[
        Extension(
            "forensics.parsers._fastlog", ["parsers/_fastlog.c"], extra_compile_args=["-O2"], optional=not required
        ),
        Extension(
            "forensics.parsers._fasttrace",
            ["parsers/_fasttrace.c"],
            extra_compile_args=["-O2"],
            libraries=["m"],
            optional=not required,
        ),
    ]
)
