"""forensics: offline post-mortems of LLM serving incidents (SGLang PD, NIXL, agent transcripts)."""

import os

# numpy's OpenBLAS starts a thread per core that spins after start-up: nothing here multiplies
# matrices, and on a 2-core laptop those spins took 2% of an ingest's CPU (issue 5).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
