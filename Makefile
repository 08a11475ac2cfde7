PY ?= python3
STORE ?= forensics-store

.PHONY: install demo test goldens bench

install:
	$(PY) -m pip install -q -e '.[test]'

# Ingest the sample incident and show what is in it.
demo: install
	rm -rf $(STORE)
	forensics ingest sample_logs/ --store $(STORE)
	forensics sql --store $(STORE) "SELECT host, role, kind, count(*) AS n FROM batches GROUP BY ALL ORDER BY ALL"
	forensics sql --store $(STORE) "SELECT kind, reason, count(*) AS n FROM events WHERE severity IN ('error', 'fatal') GROUP BY ALL ORDER BY n DESC, kind"

test: install
	$(PY) -m pytest tests

# Rewrite golden snapshots deliberately; read `git diff tests/golden` before committing.
goldens: install
	$(PY) -m tests.goldens --update

bench: install
	$(PY) bench/run.py
