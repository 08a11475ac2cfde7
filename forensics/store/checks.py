"""The store checks itself: what every report checks before it reads, and `forensics verify`.

Every report checks each data file's Parquet frame (the magic at both ends and a footer length
that fits: twelve bytes read per file, far less than parsing every footer) and that each
table's files hold only that table's columns (DuckDB reads the footers anyway to bind the views).
`verify` parses every footer and decodes every page, checks the inputs against their `files` rows, the derived snapshots
against their manifests with checksums, the verdicts and clocks.json; `--repair` fixes what can
be fixed without losing anything that cannot be read again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from pathlib import Path

from forensics.core import schema
from forensics.core.errors import StoreError
from forensics.store import Store, snapshots
from forensics.store.clocks import clocks_problem, offset_problem, read_clocks

_MAGIC = b"PAR1"
_PART = re.compile(r"^(?P<table>[a-z_]+)-\d{5}\.parquet$")


def parquet_problem(path: str | os.PathLike, full: bool = False) -> str | None:
    """What is wrong with a Parquet file (None: nothing seen). `full` parses the footer too."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < 12:
                return f"is {size} bytes, too short for Parquet"
            head, tail = os.pread(fd, 4, 0), os.pread(fd, 8, size - 8)
        finally:
            os.close(fd)
    except OSError as e:
        return f"cannot be read ({e.strerror or type(e).__name__})"
    if head != _MAGIC or tail[4:] != _MAGIC:
        return "is not Parquet (cut short, or overwritten)"
    if int.from_bytes(tail[:4], "little") > size - 12:
        return "is cut short (its footer is not whole)"
    if full:
        import pyarrow.parquet as pq

        try:
            pq.read_metadata(path)
        except Exception as e:  # pyarrow raises several kinds for a damaged footer
            return f"has a footer that does not parse ({type(e).__name__})"
    return None


def repair_help(store: Store) -> str:
    import shlex

    return (
        f"run `forensics verify --repair --store {shlex.quote(str(store.root))}`: it drops the input the "
        "file belongs to, and `forensics ingest` of the same dump reads it again"
    )


def damaged(store: Store, path: str, why: str, more: int = 0) -> StoreError:
    also = f" (and {more} more: `forensics verify` lists them)" if more else ""
    return StoreError(f"store file {why}{also}", file=path, help=repair_help(store))


def require_readable(store: Store, files: list[str]) -> None:
    """StoreError naming the first data file of `files` whose Parquet frame is broken."""
    bad = [(f, why) for f in files if (why := parquet_problem(f))]
    if bad:
        raise damaged(store, bad[0][0], bad[0][1], len(bad) - 1)


def listing_problems(folder: Path, rows: list[dict]) -> list[tuple[str, str]]:
    """(file, problem) where input folder `folder` no longer holds the data files its `files` rows list
    (`data_files`: names and sizes); rows written before the column are not checked."""
    listed = [r["data_files"] for r in rows if r.get("data_files") is not None]
    if not listed:
        return []
    want = {d["file"]: d["bytes"] for files in listed for d in files}
    try:
        have = {e.name: e.stat().st_size for e in os.scandir(folder) if _PART.match(e.name)}
    except OSError as e:
        return [(str(folder), f"cannot be listed ({e.strerror or type(e).__name__})")]
    out = []
    for name, size in sorted(want.items()):
        if name not in have:
            out.append((str(folder / name), f"is missing: its input's `files` row lists {len(want)} data files"))
        elif have[name] != size:
            out.append((str(folder / name), f"is {have[name]} bytes, its input's `files` row says {size}"))
    for name in sorted(have.keys() - want.keys()):
        if not name.startswith("files-"):
            out.append((str(folder / name), "is not one of the data files its input's `files` row lists"))
    return out


def require_complete(store: Store, again: bool = True, con=None) -> None:
    """StoreError naming the first committed input whose folder no longer holds the data files its `files`
    row lists (one was deleted, truncated or added): a read would give a silently different answer.

    Costs a listing of each input's folder and one read of the `files` rows' `data_files`. What looks
    wrong is looked at again, alone, before it is said: an ingest may commit, replace or drop an input
    between the listing and the read. `con`, a DuckDB connection of the caller's, saves opening one
    (which costs more than the read)."""
    if not store.exists():
        return
    import duckdb

    folders = {p.name: p for p in store.data.iterdir() if p.is_dir()}
    files = store.table_files("files")
    suspects = sorted(folders.keys() - {Path(f).parent.name for f in files})
    if files:
        own = con is None
        con = duckdb.connect(":memory:") if own else con
        try:
            described = con.execute("DESCRIBE SELECT * FROM read_parquet($f, union_by_name = true)", {"f": files})
            rows = []
            if "data_files" in [r[0] for r in described.fetchall()]:  # not in stores written before
                rows = con.execute(
                    "SELECT parse_filename(parse_dirpath(filename)) AS key, path, data_files "
                    "FROM read_parquet($f, union_by_name = true, filename = true)",
                    {"f": files},
                ).fetchall()
        except duckdb.Error:
            if again and not all(os.path.exists(f) for f in files):
                return require_complete(store, again=False, con=None if own else con)  # an input went while it was read
            err = unreadable(store, files)
            if err is None:
                raise
            raise err from None
        finally:
            if own:
                con.close()
        by_key: dict[str, list[dict]] = {}
        for key, path, data_files in rows:
            by_key.setdefault(key, []).append({"path": path, "data_files": data_files})
        suspects += [k for k, rows_ in sorted(by_key.items()) if k in folders and listing_problems(folders[k], rows_)]
    bad = [p for key in suspects for p in _input_problems(store.data / key)]
    if bad:
        path, why = bad[0]
        raise damaged(store, path, _what_is_wrong(path) or why, len(bad) - 1)


def _input_problems(folder: Path) -> list[tuple[str, str]]:
    """(file, problem) of one input folder as it is now, its files rows read afresh; none once it is gone."""
    try:
        names = [e.name for e in os.scandir(folder)]
    except FileNotFoundError:
        return []
    if not any(n.startswith("files-") and _PART.match(n) for n in names):
        return [(str(folder), "is an input without its `files` row")]
    rows = _files_rows(folder)
    source = next((r["path"] for r in rows if r.get("path")), None)
    return [(f, why + (f" (input of {source})" if source else "")) for f, why in listing_problems(folder, rows)]


def _what_is_wrong(path: str) -> str | None:
    """What a file that is there but not as listed holds, when that says more than its size (cut short,
    overwritten, a part of another table)."""
    m = _PART.match(os.path.basename(path))
    if not os.path.exists(path) or not m or m["table"] not in schema.TABLES:
        return None
    if why := parquet_problem(path):
        return why
    found = foreign_columns(schema.TABLES[m["table"]], [path])
    return f"holds columns that table {m['table']} does not have ({', '.join(found[1][:3])})" if found else None


def foreign_columns(table: schema.Table, files: list[str]) -> tuple[str, list[str]] | None:
    """The first of `files` holding columns its table does not have, with them."""
    import pyarrow.parquet as pq

    known = {c.name for c in table.columns + table.stored_only}
    for f in files:
        try:
            names = pq.read_schema(f).names
        except Exception:
            continue
        extra = [n for n in names if n not in known]
        if extra:
            return f, extra
    return None


def unreadable(store: Store, files: list[str]) -> StoreError | None:
    """After DuckDB refused a table's files: the error naming the one it choked on, if one is."""
    for f in files:
        why = parquet_problem(f, full=True)
        if why:
            return damaged(store, f, why)
    return None


# what DuckDB says when a file's pages (past the footer the reports check) are damaged
_READ_FAILURE = re.compile(
    r"Failed to read file|TProtocolException|decompression|Corrupt|Invalid Input Error: .*parquet"
    r"|IO Error",
    re.I,
)


def explain_read_error(store: Store, err: Exception) -> StoreError | None:
    """The StoreError for a query that failed on a damaged store file, naming it; None when it is not that.

    Costs a read of the files in question, paid only once a query has failed.
    """
    msg = str(err)
    if not store.exists() or not _READ_FAILURE.search(msg):
        return None
    named = [
        f for f in re.findall(r'"([^"]+\.parquet)"', msg) if Path(f).resolve().is_relative_to(store.root.resolve())
    ]
    candidates = named or [str(p) for p in sorted(store.data.glob("*/*.parquet"))]
    for f in candidates:
        why = parquet_problem(f, full=True) or pages_problem(f)
        if why:
            return damaged(store, f, why)
    return None


def pages_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a Parquet file's data pages (None: every row group decodes)."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        for i in range(pf.num_row_groups):
            pf.read_row_group(i)
    except Exception as e:  # whatever the decoder raises, the file is what failed
        return f"has data pages that do not decode ({type(e).__name__})"
    return None


# -- forensics verify --------------------------------------------------------------------------------


@dataclasses.dataclass
class Finding:
    path: str
    what: str
    repaired: str = ""


@dataclasses.dataclass
class Report:
    findings: list[Finding] = dataclasses.field(default_factory=list)
    checked: dict[str, int] = dataclasses.field(default_factory=dict)
    dropped: list[str] = dataclasses.field(default_factory=list)  # source paths of the dropped inputs
    seconds: float = 0.0

    @property
    def broken(self) -> list[Finding]:
        return [f for f in self.findings if not f.repaired]


def _input_paths(folder: Path) -> list[str]:
    """The source paths an input folder's `files` rows name (empty when unreadable)."""
    import pyarrow.parquet as pq

    out = []
    for f in sorted(folder.glob("files-*.parquet")):
        try:
            out += [p for p in pq.read_table(f, columns=["path"]).column("path").to_pylist() if p]
        except Exception:
            continue
    return out


def _files_rows(folder: Path) -> list[dict]:
    """The `files` rows of one input folder, with their `data_files` (none when unreadable)."""
    import pyarrow.parquet as pq

    out = []
    for f in sorted(folder.glob("files-*.parquet")):
        try:
            t = pq.read_table(f)
        except Exception:
            continue
        cols = [c for c in ("path", "data_files") if c in t.column_names]
        out += t.select(cols).to_pylist()
    return out


def _check_input(folder: Path) -> list[tuple[str, str]]:
    """(file, problem) of one committed input folder."""
    import pyarrow.parquet as pq

    out = []
    names = sorted(p.name for p in folder.iterdir())
    if not any(_PART.match(n) and _PART.match(n)["table"] == "files" for n in names):
        out.append((str(folder), "is an input without its `files` row"))
    out += listing_problems(folder, _files_rows(folder))
    for n in names:
        path = folder / n
        m = _PART.match(n)
        if not m or m["table"] not in schema.TABLES or schema.TABLES[m["table"]].view:
            continue  # no report reads it: the views read <table>-NNNNN.parquet of known tables only
        why = parquet_problem(path, full=True) or pages_problem(path)
        if why:
            out.append((str(path), why))
            continue
        known = {c.name for c in schema.TABLES[m["table"]].columns + schema.TABLES[m["table"]].stored_only}
        extra = [c for c in pq.read_schema(path).names if c not in known]
        if extra:
            out.append((str(path), f"holds columns of another table ({', '.join(extra[:3])})"))
        elif m["table"] == "files" and pq.read_metadata(path).num_rows == 0:
            out.append((str(path), "holds no `files` row"))
    return out


def verify(store: Store, repair: bool = False, *, views: list[str]) -> Report:
    """Check the whole store; with `repair`, fix what can be fixed (see the module docstring).

    `views`: the derived views a snapshot set must hold (the catalog defines them)."""
    t0 = time.perf_counter()
    store.require()
    rep = Report()
    try:
        lock = store.lock() if repair else None  # no ingest commits while inputs are dropped
    except OSError as e:
        raise StoreError(
            f"cannot repair {store.root}: {e.strerror or e}",
            file=str(store.root),
            help="repair needs write access to the store: check its owner and mode",
        ) from None
    try:
        bad_inputs: dict[str, list[tuple[str, str]]] = {}
        n_files = 0
        for folder in sorted(p for p in store.data.iterdir() if p.is_dir()):
            n_files += sum(1 for _ in folder.iterdir())
            problems = _check_input(folder)
            if problems:
                bad_inputs[folder.name] = problems
        rep.checked["inputs"] = len(store.committed())
        rep.checked["data files"] = n_files
        for key, problems in sorted(bad_inputs.items()):
            folder = store.data / key
            paths = _input_paths(folder)
            done = ""
            if repair:
                rep.dropped += paths or [f"(input {key}: its `files` row is unreadable)"]
                _drop_input(store, folder)
                done = "input dropped"
            for path, what in problems:
                src = f" (input of {paths[0]})" if paths else ""
                rep.findings.append(Finding(path, what + src, done))
        _check_verdicts(store, rep, repair)
        _check_snapshots(store, rep, repair, list(views))
        _check_clocks(store, rep, repair)
    except OSError as e:
        raise StoreError(
            f"verify stopped: {e.strerror or e}",
            file=getattr(e, "filename", None) or str(store.root),
            help="check the store's owner and mode, then run it again",
        ) from None
    finally:
        if lock is not None:
            lock.close()
    rep.seconds = time.perf_counter() - t0
    return rep


def _drop_input(store: Store, folder: Path) -> None:
    """Take an input out of the store with one rename, as ingest puts one in."""
    import shutil

    store.tmp.mkdir(parents=True, exist_ok=True)
    gone = store.tmp / f"dropped-{folder.name}.{os.getpid()}"
    os.replace(folder, gone)
    shutil.rmtree(gone, ignore_errors=True)


def _check_verdicts(store: Store, rep: Report, repair: bool) -> None:
    root = snapshots.verdicts_dir(store)
    files = sorted(root.glob("*/*.parquet")) if root.is_dir() else []
    rep.checked["verdict files"] = len(files)
    for f in files:
        why = parquet_problem(f, full=True)
        if why:
            done = ""
            if repair:
                f.unlink(missing_ok=True)
                done = "removed: the next report computes it again"
            rep.findings.append(Finding(str(f), why, done))


def _check_snapshots(store: Store, rep: Report, repair: bool, views: list[str]) -> None:
    derived = store.root / "derived"
    folders = (
        sorted(
            p for p in derived.iterdir() if p.is_dir() and p.name != snapshots.VERDICTS and not p.name.startswith(".")
        )
        if derived.is_dir()
        else []
    )
    rep.checked["derived snapshot sets"] = len(folders)
    for folder in folders:
        why = snapshots.check(folder, views, deep=True)
        if why:
            done = ""
            if repair:
                done = (
                    "removed: the next report computes the views again"
                    if snapshots.remove(folder)
                    else "in use by a running report: run verify --repair again once it ends"
                )
            rep.findings.append(Finding(str(folder), f"derived-view cache {why}", done))


def _check_clocks(store: Store, rep: Report, repair: bool) -> None:
    path = store.clocks_file
    if not path.exists():
        return
    rep.checked["clocks.json"] = 1
    try:
        data = read_clocks(path)
        why = clocks_problem(data)
    except StoreError as e:
        data, why = None, e.what.removeprefix("clocks.json ")
    if why is None:
        return
    done = ""
    if repair:
        kept = {h: float(v) for h, v in data.items() if h and not offset_problem(v)} if isinstance(data, dict) else {}
        os.replace(path, path.with_name("clocks.json.broken"))
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(kept, indent=1, sort_keys=True))
        os.replace(tmp, path)
        done = (
            f"moved to clocks.json.broken; {len(kept)} valid offset{'s' * (len(kept) != 1)} kept "
            "(`forensics clocks` shows them)"
        )
    rep.findings.append(Finding(str(path), f"clocks.json {why}", done))
