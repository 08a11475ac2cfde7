PY ?= python3
STORE ?= forensics-store

.PHONY: install demo test goldens bench

# An editable install compiles no bytecode, and with PYTHONDONTWRITEBYTECODE set every command
# would compile the modules again. A regular pip install does this too.
install:
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m compileall -q forensics parsers queries

# Ingest sample_logs/ (the generated incident and the era samples) and walk through the incident.
demo: install
	rm -rf $(STORE)
	forensics ingest sample_logs/ --store $(STORE)
	forensics clocks --store $(STORE)
	forensics clocks set decode-1 2.5 --store $(STORE)
	forensics timeline --store $(STORE) --bucket 1m --since 2026-11-20T14:00:00 --until 2026-11-20T14:20:00
	forensics evidence --store $(STORE)
	forensics sql --store $(STORE) "SELECT bootstrap_room, prefill_host, decode_host, outcome FROM rooms WHERE NOT checksum_match ORDER BY bootstrap_room"

test: install
	$(PY) -m pytest tests

# Rewrite golden snapshots deliberately; read `git diff tests/golden` before committing.
goldens: install
	$(PY) -m tests.goldens --update

bench: install
	$(PY) bench/run.py
