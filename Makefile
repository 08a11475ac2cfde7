# make installs into a virtual environment of its own, .venv (made with the venv module: on Debian and
# Ubuntu `sudo apt install python3-venv` where it is missing), whatever python it finds, unless one is
# active (VIRTUAL_ENV set, or python3 is a venv's: sys.prefix != sys.base_prefix): then it installs
# there. PY=... names any other interpreter, and make installs into that one.
SYSTEM_PY ?= python3
IN_VENV := $(shell $(SYSTEM_PY) -c 'import os, sys; print(int(sys.prefix != sys.base_prefix or bool(os.environ.get("VIRTUAL_ENV"))))' 2>/dev/null)
VENV ?= .venv
ifeq ($(IN_VENV),1)
PY ?= $(SYSTEM_PY)
else
PY ?= $(VENV)/bin/python
endif
FORENSICS = $(PY) -m forensics.cli

.PHONY: install install-run demo test check lint goldens bench bench-fleet sanitize

# An editable install compiles no bytecode, and with PYTHONDONTWRITEBYTECODE set every command
# would compile the modules again. A regular pip install does this too. `install` adds the test
# extras (pytest, ruff, import-linter, Ray: test, check, lint and the benches use it); `install-run`
# is what the commands alone need (the demo uses it).
install: $(filter $(VENV)/bin/python,$(PY))
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m compileall -q forensics parsers queries

install-run: $(filter $(VENV)/bin/python,$(PY))
	$(PY) -m pip install -q -e .
	$(PY) -m compileall -q forensics parsers queries

$(VENV)/bin/python:
	@$(SYSTEM_PY) -m venv $(VENV) || { \
		echo "error: $(SYSTEM_PY) cannot make a virtual environment in $(VENV)"; \
		echo "  = help: install the venv module (Debian, Ubuntu: sudo apt install python3-venv), or give PY=/path/to/python"; \
		rm -rf $(VENV); exit 1; }
	@echo "made a virtual environment in $(VENV): run its forensics as $(VENV)/bin/forensics, or as forensics after . $(VENV)/bin/activate"

# Ingest the generated incident and walk through it; the era samples (dated 2024-2026) go into a
# store of their own, so the incident's charts span the incident. The timelines are written to
# $(DEMO_OUT) in every format. The demo's store is its own (demo-store/, not the default
# ./forensics-store that `forensics ingest` writes): an incident ingested later is not mixed into it.
STORE ?= demo-store
DEMO_OUT ?= demo-out
demo: install-run
	rm -rf $(STORE) $(STORE)-eras $(DEMO_OUT)
	mkdir -p $(DEMO_OUT)
	$(FORENSICS) ingest sample_logs/incident --store $(STORE)
	$(FORENSICS) ingest sample_logs/eras --store $(STORE)-eras
	$(FORENSICS) clocks --store $(STORE)
	$(FORENSICS) clocks set decode-1 2.5 --store $(STORE)
	$(FORENSICS) timeline --store $(STORE) --bucket 1m --since 2026-11-20T14:00:00 --until 2026-11-20T14:20:00
	$(FORENSICS) timeline --store $(STORE) --format markdown -o $(DEMO_OUT)/timeline.md
	$(FORENSICS) timeline --store $(STORE) --format html -o $(DEMO_OUT)/timeline.html
	$(FORENSICS) timeline --store $(STORE) --format png -o $(DEMO_OUT)/timeline.png
	$(FORENSICS) timeline --store $(STORE) --format svg -o $(DEMO_OUT)/timeline.svg
	$(FORENSICS) evidence --store $(STORE)
	$(FORENSICS) sql --store $(STORE) "SELECT bootstrap_room, prefill_host, decode_host, outcome FROM rooms WHERE NOT checksum_match ORDER BY bootstrap_room"

# The suite on every core (pytest-xdist). A module's tests go to one worker (loadscope), so its
# module fixtures are built once; stores that several modules read are built once and shared by
# the workers (tests/conftest.py). `make check` is the fast tier: no test marked slow, browser or
# real_data (pyproject.toml lists the markers; tests/slow.txt, from `python -m tests.slowlist`, marks
# slow the tests measured at a fifth of a second or more).
PYTEST = $(PY) -m pytest tests -n auto --dist loadscope
test: install
	$(PYTEST)

check: install
	$(PYTEST) -m "not slow and not browser and not real_data"

# ruff (lint and format) and the import contracts of pyproject.toml on the tree as it installs
lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m tools.lint_imports

# Rewrite golden snapshots deliberately; read `git diff tests/golden` before committing.
goldens: install
	$(PY) -m tests.goldens --update

# --memory: peak RSS of every command on the large store and on the store of a 4 GiB log
# (bench/memory.py); BENCH_ARGS= to skip both
BENCH_ARGS ?= --memory --memory-log 4G
bench: install
	$(PY) bench/run.py $(BENCH_ARGS)

# A fleet's dump (64 hosts x 64 MB of PD logs and transfer traces) ingested by the local engine and
# by Ray on a local cluster (bench/fleet.py; it needs Ray: the test extra has it). On a small
# machine: make bench-fleet FLEET_ARGS="--hosts 8 --per-host 16M"
FLEET_ARGS ?=
bench-fleet: install
	$(PY) bench/fleet.py $(FLEET_ARGS)

# Both native modules (parsers/_fastlog.c, parsers/_fasttrace.c) built with AddressSanitizer and
# UBSan (into a temporary directory: the installed builds stay), run under the tests that drive
# them hardest; FORENSICS_FASTLOG / FORENSICS_FASTTRACE make forensics/core/native.py load them in
# place of the installed ones, in every process. The ASan runtime must come before the interpreter's
# allocations (LD_PRELOAD), and libstdc++ with it, or ASan cannot intercept the C++ exceptions
# DuckDB throws; CPython leaks by design, so no leak check. Reports go to files, since pytest
# holds stderr when a sanitizer aborts the process.
sanitize: install
	@d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	inc=$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])'); \
	for m in _fastlog _fasttrace; do \
		$(CC) -shared -fPIC -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
			-Wall -Wextra -Werror -I"$$inc" parsers/$$m.c -lm -o "$$d/$$m.so" || exit 1; \
	done; \
	rc=0; FORENSICS_FASTLOG="$$d/_fastlog.so" FORENSICS_FASTTRACE="$$d/_fasttrace.so" FORENSICS_REQUIRE_NATIVE=1 \
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libstdc++.so)" \
	ASAN_OPTIONS=detect_leaks=0:log_path="$$d/asan" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path="$$d/ubsan" \
	$(PY) -m pytest tests/test_native_built.py tests/test_native.py tests/test_blocks.py tests/test_bad_inputs.py \
		tests/test_trace_fast.py tests/test_transfers.py -q -p no:cacheprovider || rc=$$?; \
	cat "$$d"/asan.* "$$d"/ubsan.* 2>/dev/null; exit $$rc
