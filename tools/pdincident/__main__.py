"""`python -m tools.pdincident OUT_DIR --seed N [--minutes M]`: write one incident dump."""

from __future__ import annotations

from tools.pdincident import main

main()
