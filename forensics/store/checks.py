"""The store checks itself: what every report checks before it reads, and `forensics verify`.

Every report checks each data file's Parquet frame (the magic at both ends and a footer length
that fits: twelve bytes read per file, far less than parsing every footer) and that each
table's files hold only that table's columns (DuckDB reads the footers anyway to bind the views).
`verify` parses every footer and decodes every page, checks the inputs against their manifests (inputs/<key>.json)
and tables/ for files no manifest lists, the derived snapshots
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
from forensics.store import Store, commits, hive, snapshots
from forensics.store.clocks import clocks_problem, offset_problem, read_clocks

_MAGIC = b"PAR1"


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


def _listed(store: Store, key: str, m: dict) -> list[tuple[str, str]]:
    """(file, problem) where the parts input `key`'s manifest lists are not there as listed."""
    if m.get("unreadable"):
        return [(str(commits.manifest_path(store, key)), "is an input manifest this version cannot read")]
    parts = m["parts"]
    if not any(hive.table_of(p["file"]) == "files" for p in parts):
        return [(str(commits.manifest_path(store, key)), "is an input without its `files` row")]
    out = []
    for p in parts:
        path = commits.resolve(store, m, p["file"])
        try:
            size = path.stat().st_size
        except OSError:
            out.append((str(path), f"is missing: its input's manifest lists {len(parts)} data files"))
            continue
        if size != p["bytes"]:
            out.append((str(path), f"is {size} bytes, its input's manifest says {p['bytes']}"))
    return out


def _unlisted(store: Store, manifests: dict[str, dict]) -> list[tuple[str, str]]:
    """(file, problem) of each Parquet file under tables/ that no committed manifest lists: we never
    read it, but a reader that globs the tables would."""
    listed = {p["file"] for m in [*manifests.values(), *commits.present(store).values()] for p in m["parts"]}
    out = []
    for rel in all_parts(store):
        if rel not in listed:
            key = hive.key_of(rel)
            why = (
                "is not one of the data files its input's manifest lists"
                if key in manifests
                else "is a part of no committed input (a reader that globs tables/ would read it)"
            )
            out.append((str(store.tables / rel), why))
    return out


def all_parts(store: Store) -> list[str]:
    """Every Parquet file under tables/, relative to it (names beginning with . or _ are not data, as for Hive)."""
    out = []
    for dirpath, dirs, files in os.walk(store.tables):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for f in files:
            if f.endswith(".parquet") and not f.startswith((".", "_")):
                out.append(os.path.relpath(os.path.join(dirpath, f), store.tables).replace(os.sep, "/"))
    return sorted(out)


def require_complete(store: Store, again: bool = True, con=None) -> None:
    """StoreError naming the first data file that is not as the committed manifests list it (one was
    deleted, truncated or added): a read would give a silently different answer.

    Costs a stat of each part and a listing of tables/. What looks wrong is looked at again, alone,
    before it is said: an ingest may commit, replace or drop an input between the listing and the
    stats. `con` is accepted for the callers that pass their connection; nothing is read through it."""
    if not store.exists():
        return
    manifests = store.manifests()
    bad = [p for key, m in sorted(manifests.items()) for p in _listed(store, key, m)]
    bad += _unlisted(store, manifests)
    if bad and again:
        return require_complete(store, again=False)
    if bad:
        path, why = bad[0]
        raise damaged(store, path, (_what_is_wrong(store, path) or why) + _input_of(store, path), len(bad) - 1)


def _input_of(store: Store, path: str) -> str:
    key = hive.key_of(path)
    if path.endswith(".json"):
        key = Path(path).stem
    paths = input_paths(store, key)
    return f" (input of {paths[0]})" if paths else ""


def _what_is_wrong(store: Store, path: str) -> str | None:
    """What a file that is there but not as listed holds, when that says more than its size (cut short,
    overwritten, a part of another table)."""
    if not path.endswith(".parquet") or not os.path.exists(path):
        return None
    try:
        table = hive.table_of(os.path.relpath(path, store.tables).replace(os.sep, "/"))
    except ValueError:
        return None
    if table not in schema.TABLES:
        return None
    if why := parquet_problem(path):
        return why
    found = foreign_columns(schema.TABLES[table], [path])
    return f"holds columns that table {table} does not have ({', '.join(found[1][:3])})" if found else None


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
    r"|IO Error|don't know what type",
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
    candidates = named or [str(store.tables / rel) for rel in all_parts(store)]
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


def input_paths(store: Store, key: str) -> list[str]:
    """The source paths an input's `files` rows name (empty when unreadable)."""
    import pyarrow.parquet as pq

    out = []
    for f in store.input_parts(key, "files"):
        try:
            out += [p for p in pq.read_table(f, columns=["path"]).column("path").to_pylist() if p]
        except Exception:
            continue
    return out


def _check_input(store: Store, key: str, m: dict) -> list[tuple[str, str]]:
    """(file, problem) of one committed input."""
    import pyarrow.parquet as pq

    out = _listed(store, key, m)
    for p in m.get("parts") or []:
        path = commits.resolve(store, m, p["file"])
        table = hive.table_of(p["file"])
        if not path.exists() or table not in schema.TABLES or schema.TABLES[table].view:
            continue
        why = parquet_problem(path, full=True) or pages_problem(path)
        if why:
            out.append((str(path), why))
            continue
        known = {c.name for c in schema.TABLES[table].columns + schema.TABLES[table].stored_only}
        extra = [c for c in pq.read_schema(path).names if c not in known]
        if extra:
            out.append((str(path), f"holds columns of another table ({', '.join(extra[:3])})"))
        elif table == "files" and pq.read_metadata(path).num_rows == 0:
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
        if repair:
            store.clear_tmp()  # what a killed ingest left: its commit finished, or its folder gone
        manifests = store.manifests()
        bad_inputs: dict[str, list[tuple[str, str]]] = {}
        for key, m in sorted(manifests.items()):
            problems = _check_input(store, key, m)
            if problems:
                bad_inputs[key] = problems
        rep.checked["inputs"] = len(manifests)
        rep.checked["data files"] = sum(len(m["parts"]) for m in manifests.values())
        for key, problems in sorted(bad_inputs.items()):
            paths = input_paths(store, key)
            done = ""
            if repair:
                rep.dropped += paths or [f"(input {key}: its `files` row is unreadable)"]
                commits.drop(store, key)
                done = "input dropped"
            for path, what in problems:
                src = f" (input of {paths[0]})" if paths else ""
                rep.findings.append(Finding(path, what + src, done))
        for path, what in _unlisted(store, store.manifests() if repair else manifests):
            done = ""
            if repair:
                Path(path).unlink(missing_ok=True)
                done = "removed: no committed input lists it"
            rep.findings.append(Finding(path, what, done))
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
