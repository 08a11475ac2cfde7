"""The attack corpus: hostile and damaged cases, each named after what it breaks, with its expected outcome.

A case is one function in a module of this package, registered with `@attack`; its docstring says
what a user needs to happen, and its body builds the inputs in a temporary folder (by code, from the
case's random draw), runs the real CLI and checks that outcome by value. Every run goes through
`Attack`, which checks what every case must hold besides its own outcome:

- no "internal error" and no traceback in anything the command printed, and the exit code expected;
- nothing printed holds a raw control character or a bidi override;
- after an ingest, every line of every read input is parsed, a continuation or in `unparsed`
  (files.lines == parsed + continuation + unparsed, equal to the lines the file holds), and no
  (source_file, line_no) is stored twice;
- user SQL leaves the store byte-identical;
- a subprocess run's peak RSS is under 1 GiB.

Random content comes from the suite's seed (tests/conftest.py): the default is fixed, so CI judges
the change and not the draw; FORENSICS_TEST_SEED=N replays N, FORENSICS_TEST_SEED=random draws a
fresh one; every failure names the seed that replays it.
tests/test_attacks.py discovers the cases and runs each as its own test.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import importlib
import os
import pkgutil
import random
import re
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Callable

from tests.conftest import seed
from tools import procs

SEED = seed(18_07)
RSS_LIMIT = 1 << 30

GOOD = (
    "[2026-10-30 10:{m:02d}:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
)


def good(n: int, start: int = 0) -> str:
    """`n` decode-batch lines of an SGLang server log, one per second from 10:00:00 + `start`."""
    return "".join(GOOD.format(m=((start + i) // 60) % 60, s=(start + i) % 60, n=i) for i in range(n))


@dataclasses.dataclass
class Case:
    name: str
    fn: Callable[["Attack"], None]
    module: str

    @property
    def outcome(self) -> str:
        return (self.fn.__doc__ or "").strip()


CASES: dict[str, Case] = {}


def attack(fn: Callable[["Attack"], None]) -> Callable[["Attack"], None]:
    """Register a case under its function's name; its docstring is the expected outcome."""
    assert fn.__name__ not in CASES, f"two cases named {fn.__name__}"
    assert (fn.__doc__ or "").strip(), f"case {fn.__name__} states no expected outcome"
    CASES[fn.__name__] = Case(fn.__name__, fn, fn.__module__.rsplit(".", 1)[-1])
    return fn


def discover() -> dict[str, Case]:
    for m in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{m.name}")
    return dict(sorted(CASES.items()))


# -- what every output must hold ------------------------------------------------------------------


def terminal_safe(text: str) -> list[str]:
    """The control and bidi characters a terminal would act on (tab and newline are text)."""
    from forensics.core.text import CONTROL

    return sorted({f"U+{ord(c):04X}" for c in CONTROL.findall(text)})


def store_digest(root: Path) -> dict[str, str]:
    """Every file and folder of the store with its content hash; .tmp is DuckDB's scratch space."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] == ".tmp":
            continue
        out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "dir"
    return out


def lines_in(data: bytes) -> int:
    """Lines a reader sees in `data`: LF ends a line, or CR alone where the file has no LF."""
    sep = b"\n" if b"\n" in data or b"\r" not in data else b"\r"
    return data.count(sep) + (0 if not data or data.endswith(sep) else 1)


def _lines(path: Path) -> list[str]:
    try:
        return [ln for ln in path.read_text().splitlines() if ln.strip()]
    except FileNotFoundError:
        return []


def readable_gzip(data: bytes) -> bytes:
    """What a reader gets from a (possibly cut) gzip stream."""
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error):
        return zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(data)


@dataclasses.dataclass
class Run:
    args: list[str]
    code: int
    stdout: str
    stderr: str
    rss: int | None = None  # peak resident bytes, subprocess runs only

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.startswith("error: ")]


class Attack:
    """One case's workplace: its folder, its random draw, and CLI runs that check the common invariants."""

    def __init__(self, name: str, root: Path):
        self.name = name
        self.root = root
        self.seed = SEED
        # a draw per case: adding a case does not change the others' content
        self.rng = random.Random(f"{SEED}:{name}")
        self.runs: list[Run] = []
        self._cons: dict = {}

    def path(self, *parts: str) -> Path:
        p = self.root.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write(self, rel: str, data: str | bytes) -> Path:
        p = self.path(*rel.split("/"))
        p.write_bytes(data.encode() if isinstance(data, str) else data)
        return p

    def good_log(self, rel: str = "dump/decode-0/server.log", n: int | None = None) -> tuple[Path, int]:
        """A good server log of a drawn length: the input every bad one must not cost."""
        n = n or self.rng.randint(200, 2100)
        return self.write(rel, good(n, self.rng.randrange(600))), n

    # -- running the CLI ---------------------------------------------------------------------

    def cli(self, *args, exit: int | tuple[int, ...] = 0, subprocess_run: bool = False, timeout: float = 300) -> Run:
        """Run `forensics ARGS` in-process (CliRunner), or as a subprocess with its peak RSS measured."""
        args = [str(a) for a in args]
        self.close()  # a command may change the store: read it afresh afterwards
        if subprocess_run:
            run = self._subprocess(args, timeout)
        else:
            from click.testing import CliRunner

            from forensics.cli import main

            r = CliRunner().invoke(main, args, catch_exceptions=True)
            if r.exception is not None and not isinstance(r.exception, SystemExit):
                raise AssertionError(f"forensics {' '.join(args)} raised {r.exception!r}") from r.exception
            run = Run(args, r.exit_code, r.stdout, r.stderr)
        self.runs.append(run)
        what = f"forensics {' '.join(args)[:300]}"
        assert "internal error" not in run.output and "Traceback" not in run.output, f"{what}: {run.output[-3000:]}"
        want = exit if isinstance(exit, tuple) else (exit,)
        assert run.code in want, f"{what}: exit {run.code}, expected {exit}: {run.output[-3000:]}"
        bad = terminal_safe(run.output)
        assert not bad, f"{what}: raw control characters {bad} reach the terminal"
        if run.rss is not None:
            assert run.rss < RSS_LIMIT, f"{what}: peak RSS {run.rss / 2**20:.0f} MiB"
        return run

    def _subprocess(self, args: list[str], timeout: float) -> Run:
        env = {**os.environ, "TZ": "UTC", "PYTHONIOENCODING": "utf-8"}
        out, err = self.path("run.out"), self.path("run.err")
        with open(out, "wb") as fo, open(err, "wb") as fe:
            p = subprocess.Popen(
                [sys.executable, "-m", "forensics.cli", *args],
                stdout=fo,
                stderr=fe,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
            # wait4 gives this child's own peak RSS (its reaped workers included), not the session's
            deadline = time.monotonic() + timeout
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    os.killpg(p.pid, 9)
                    os.wait4(p.pid, 0)
                    raise AssertionError(f"forensics {' '.join(args)[:300]} did not finish in {timeout} s")
                time.sleep(0.05)
            p.returncode = os.waitstatus_to_exitcode(status)
        return Run(
            args,
            p.returncode,
            out.read_text(errors="replace"),
            err.read_text(errors="replace"),
            rss=usage.ru_maxrss * 1024,
        )

    def ingest(
        self,
        *paths,
        store: Path | None = None,
        exit: int | tuple[int, ...] = 0,
        jobs: int = 1,
        subprocess_run: bool = False,
        lines: dict[str, int] | None = None,
        extra=(),
        timeout: float = 300,
    ):
        """Ingest `paths` and check the store's line accounting; `lines` overrides the lines expected per file name."""
        store = store or self.root / "store"
        run = self.cli(
            "ingest",
            *paths,
            "--store",
            store,
            "-j",
            jobs,
            *extra,
            exit=exit,
            subprocess_run=subprocess_run,
            timeout=timeout,
        )
        if (Path(store) / "inputs").exists():
            self.check_store(store, lines or {})
        return run

    # -- the store -------------------------------------------------------------------------------

    def sql(self, query: str, store: Path | None = None, **params):
        """Read the store as the CLI does, on one connection per store state (a connection costs seconds):
        one of the stored tables alone for a query that reads no derived view, else one with them all."""
        from forensics import catalog
        from forensics.catalog.sql import run_sql
        from forensics.store import Store

        s = Store(store or self.root / "store")
        derived = bool(catalog.needed(query))
        key = (str(s.root), derived)
        if key not in self._cons:
            self._cons[key] = catalog.connect(s.require(), only=None if derived else "")
        return run_sql(s, query, params or None, con=self._cons[key])

    def close(self) -> None:
        for con in self._cons.values():
            con.close()
        self._cons.clear()

    def files(self, store: Path | None = None) -> dict[str, dict]:
        """The `files` rows by file name (the last path component)."""
        df = self.sql("SELECT * FROM files ORDER BY path", store)
        return {os.path.basename(r["path"]): r for r in df.iter_rows(named=True)}

    def count(self, table: str, where: str = "TRUE", store: Path | None = None) -> int:
        return int(self.sql(f"SELECT count(*) AS n FROM {table} WHERE {where}", store)["n"][0])

    def check_store(self, store: Path, lines: dict[str, int]) -> None:
        """Every read line accounted once: files.lines adds up, equals the file's lines, and no line is stored twice."""
        rows = self.sql(
            "SELECT path, status, format, lines, parsed_lines, continuation_lines, unparsed_lines "
            "FROM files ORDER BY path",
            store,
        )
        per_file = dict(self.sql("SELECT source_file, count(*) AS n FROM unparsed GROUP BY ALL", store).iter_rows())
        for r in rows.iter_rows(named=True):
            if r["status"] == "skipped":
                assert not r["lines"], f"{r['path']}: a skipped input counts {r['lines']} lines"
                continue
            got = (r["parsed_lines"] or 0) + (r["continuation_lines"] or 0) + (r["unparsed_lines"] or 0)
            assert r["lines"] == got, (
                f"{r['path']}: files.lines {r['lines']} but {got} parsed + continuation + unparsed"
            )
            assert per_file.get(r["path"], 0) == (r["unparsed_lines"] or 0), (
                f"{r['path']}: unparsed_lines {r['unparsed_lines']} but {per_file.get(r['path'], 0)} rows in unparsed"
            )
            name = os.path.basename(r["path"])
            want = lines.get(name)
            if (
                want is None
                and r["status"] == "ingested"
                and os.path.isfile(r["path"])
                and not re.search(r"\.(gz|zst|tgz|tar)$", r["path"])
            ):
                want = lines_in(Path(r["path"]).read_bytes())
            if want is not None:
                assert r["lines"] == want, f"{r['path']}: files.lines {r['lines']}, the file holds {want} lines"
        for table in ("batches", "events", "transfer_events", "unparsed"):
            dup = self.sql(
                f"SELECT source_file, line_no, count(*) AS n FROM {table} "
                "GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL LIMIT 3",
                store,
            )
            assert dup.height == 0, f"{table}: (source_file, line_no) stored twice: {dup.rows()}"
        both = self.sql(
            "SELECT u.source_file, u.line_no FROM unparsed u JOIN (SELECT source_file, line_no FROM batches "
            "UNION ALL SELECT source_file, line_no FROM events) p USING (source_file, line_no) LIMIT 3",
            store,
        )
        assert both.height == 0, f"lines both parsed and in unparsed: {both.rows()}"

    def user_sql(self, query: str, *opts, exit: int = 2, store: Path | None = None) -> Run:
        """`forensics sql QUERY`, the store hashed before and after: user SQL never changes it."""
        store = store or self.root / "store"
        before = store_digest(store)
        run = self.cli("sql", "--store", store, *opts, "--", query, exit=exit)
        after = store_digest(store)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, f"sql {query!r} changed the store: {changed[:5]}"
        return run

    # -- a signal at a moment of an ingest's phase -------------------------------------------------

    def interrupted_ingest(
        self,
        *paths,
        phase: str,
        within: float,
        hold: float | None = None,
        jobs: int = 1,
        store: Path | None = None,
        timeout: float = 300,
    ) -> tuple[Run, float]:
        """Ingest `paths` (tools/phases.py marks each phase) and send SIGINT at a drawn moment of `phase`, up to
        `within` seconds into it, to the ingest or to its whole process group (drawn); `hold` keeps the phase
        that long. Returns the run and the seconds from the signal until every process of it was gone."""
        import signal

        from tools.phases import PHASES

        assert phase in PHASES, phase
        store = Path(store or self.root / "store")
        marks = self.path(f"marks-{len(self.runs)}")
        args = [str(a) for a in ("ingest", *paths, "--store", store, "-j", jobs)]
        holds = ["--hold", f"{phase}={hold}"] if hold else []
        out, err = self.path("run.out"), self.path("run.err")
        delay = self.rng.uniform(0, within)
        group = self.rng.random() < 0.5
        self.close()
        with open(out, "wb") as fo, open(err, "wb") as fe:
            p = subprocess.Popen(
                [sys.executable, "-m", "tools.phases", str(marks), *holds, "--", *args],
                stdout=fo,
                stderr=fe,
                stdin=subprocess.DEVNULL,
                cwd=Path(__file__).resolve().parents[2],
                env={**os.environ, "TZ": "UTC", "PYTHONIOENCODING": "utf-8"},
                start_new_session=True,
            )
            try:
                deadline = time.monotonic() + timeout
                while p.poll() is None and time.monotonic() < deadline:
                    at = next((float(ln.split()[1]) for ln in _lines(marks) if ln.split()[0] == phase), None)
                    if at is not None:
                        break
                    time.sleep(0.005)
                assert p.poll() is None, f"the ingest ended before {phase}: {err.read_text()[-2000:]}"
                assert at is not None, f"no {phase} in {timeout} s"
                time.sleep(max(0.0, at + delay - time.monotonic()))
                t0 = time.monotonic()
                (os.killpg if group else os.kill)(p.pid, signal.SIGINT)
                p.wait(timeout=120)
                gone = procs.wait_gone(p.pid)
                seconds = time.monotonic() - t0
            finally:
                if p.poll() is None:
                    os.killpg(p.pid, 9)
                    p.wait()
        run = Run(args, p.returncode, out.read_text(errors="replace"), err.read_text(errors="replace"))
        self.runs.append(run)
        what = f"SIGINT to the {'process group' if group else 'ingest'} {delay:.3f} s into {phase}"
        assert not gone, f"{what}: processes {gone} outlived the ingest"
        assert run.code == 130, f"{what}: exit {run.code}: {run.stderr[-3000:]}"
        said = [ln for ln in run.stderr.splitlines() if ln.strip()]
        stops = [ln for ln in said if "interrupted" in ln]
        assert len(stops) == 1 and said[-1] == stops[0], f"{what}: not one line at the end: {said[-6:]}"
        assert stops[0].startswith("forensics: interrupted (SIGINT): "), f"{what}: {stops[0]}"
        for bad in ("Traceback", "internal error", "= help: `forensics verify`", "warning: ingest committed"):
            assert bad not in run.output, f"{what}: {bad!r} in {run.output[-3000:]}"
        assert not terminal_safe(run.output.replace("\x1b", "")), f"{what}: raw control characters"
        left = (
            [n.name for n in (store / ".tmp").iterdir() if n.name.startswith(("tmp", "failed"))]
            if (store / ".tmp").is_dir()
            else []
        )
        assert not left or "all" in stops[0], f"{what}: inputs half-written in .tmp: {left}"
        return run, seconds

    def incident(self, rel: str = "dump") -> tuple[Path, int]:
        """The generated incident's server logs and transfer traces (sample_logs/incident), copied under `rel`:
        a store whose derived views take DuckDB a while. Returns the folder and its number of inputs."""
        import shutil

        src = Path(__file__).resolve().parents[2] / "sample_logs" / "incident"
        dst = self.root / rel
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("agent", "planted.json"))
        return dst, sum(1 for p in dst.rglob("*") if p.is_file())

    def stop_and_resume(self, dump: Path, inputs: int, phase: str, within: float, **kw) -> str:
        """A SIGINT at a drawn moment of `phase` (interrupted_ingest), the store checked, then the same ingest run
        again to its end: every input once, every line once. Returns the stop's line."""
        run, _ = self.interrupted_ingest(dump, phase=phase, within=within, **kw)
        self.check_stopped()
        line = run.stderr.strip().splitlines()[-1]
        self.ingest(dump, jobs=kw.get("jobs", 1), subprocess_run=True)
        assert self.count("files") == inputs, f"{self.count('files')} files rows for {inputs} inputs"
        self.check_stopped()
        return line

    def check_stopped(self, store: Path | None = None) -> None:
        """After a stop: `verify` finds nothing wrong (committed inputs whole, snapshot sets sound), and
        every committed input's lines are accounted once."""
        store = Path(store or self.root / "store")
        if not (store / "inputs").exists():
            return
        run = self.cli("verify", "--store", store)
        assert "nothing broken" in run.stdout, run.output[-2000:]
        self.check_store(store, {})

    def error_names(self, run: Run, name: str) -> str:
        """The one `error:` line about `name`: damage is reported as a clear error naming the file."""
        hits = [ln for ln in run.error_lines() if name in ln]
        assert hits, f"no error line names {name!r}: {run.stderr[-2000:]}"
        return hits[0]
