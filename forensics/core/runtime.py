"""Process settings the command line makes before polars, numpy or duckdb load.

Importing `forensics` changes nothing in the environment: a library user keeps their own settings.
The CLI calls `configure()` first thing, and `configure_ingest()` before an ingest; both only set
what the user has not set.
"""

from __future__ import annotations

import os

from forensics.core import native


def configure() -> None:
    """Settings every command wants; they only count when made before the libraries load."""
    # numpy's OpenBLAS starts a spinning thread per core; nothing here multiplies matrices
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # polars' jemalloc hands freed pages back lazily (MADV_FREE), and those still count in RSS;
    # polars appends this to its own settings when it loads
    os.environ.setdefault("_RJEM_MALLOC_CONF", "muzzy_decay_ms:0")


def configure_ingest() -> None:
    """With the native scanner, polars gets one pool thread.

    The scanner leaves polars many small calls per pass, and its pool threads would then only
    compete with the parse threads and the Parquet writer for the cores. The polars-only path,
    with large vectorised calls, keeps polars' default.
    """
    if native.enabled("_fastlog"):
        os.environ.setdefault("POLARS_MAX_THREADS", "1")
