"""Only the native scanner lives here; everything else is in pyproject.toml.

`optional=True`: without a C compiler the install still succeeds and the polars path parses
every line (slower, same tables; see parsers/native.py).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("forensics.parsers._fastlog", ["parsers/_fastlog.c"], extra_compile_args=["-O2"], optional=True)])
