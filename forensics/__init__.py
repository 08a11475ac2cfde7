"""forensics: offline post-mortems of LLM serving incidents (SGLang PD, NIXL, agent transcripts)."""

import os

# numpy's OpenBLAS starts a thread per core that spins after start-up: nothing here multiplies
# matrices, and on a 2-core laptop those spins took 2% of an ingest's CPU (issue 5).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# polars' jemalloc hands freed pages back lazily (MADV_FREE, "muzzy"), and those still count in
# RSS: purging them at once took 50 MiB off an ingest's peak at the same speed. polars appends
# this to its own settings when it loads, so it is set before anything imports polars.
os.environ.setdefault("_RJEM_MALLOC_CONF", "muzzy_decay_ms:0")

__version__ = "0.1.0"
