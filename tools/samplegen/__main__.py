"""`python -m tools.samplegen OUT_DIR [--seed N] [--scale X]`: write the sample incident to OUT_DIR."""

from __future__ import annotations

import sys

from tools.samplegen import main

sys.exit(main())
