"""Only the native scanners live here (server logs, transfer traces); everything else is in pyproject.toml.

Without a C compiler the install still succeeds (`optional`) and the polars path parses every line
(slower, same tables; see parsers/native.py). With FORENSICS_REQUIRE_NATIVE=1 (CI) a scanner that
does not build fails the install instead of leaving a slower one behind.
"""

import os

from setuptools import Extension, setup

required = os.environ.get("FORENSICS_REQUIRE_NATIVE") == "1"
# Both modules share parsers/_native.h (a change to it rebuilds both) and build warning-free: a
# warning is an error, so that a new one is fixed rather than left for the sanitizer to find.
FLAGS = ["-O2", "-Wall", "-Wextra", "-Werror"]
setup(
    ext_modules=[
        Extension(
            f"forensics.parsers.{name}",
            [f"parsers/{name}.c"],
            depends=["parsers/_native.h"],
            extra_compile_args=FLAGS,
            libraries=libs,
            optional=not required,
        )
        for name, libs in (("_fastlog", []), ("_fasttrace", ["m"]))
    ]
)
