"""The corruption verdicts of stored turns: an analysis step, so a new detector needs no re-ingest.

Ingest stores each turn with what the detectors read (forensics.core.turns.frame). `ensure(store)`
runs the detectors over the turns of every committed input that has no verdicts of the current
version yet, session by session as the turns were numbered (`seq`), and writes one file per input:

    <store>/derived/verdicts/<version>/<input>.parquet   source, session_id, seq and the verdict columns
    <store>/derived/verdicts/CURRENT                     the version the catalog joins into `turns`

The version is a hash of the detector code and the thresholds: changing either computes new
verdicts on the next report, from the same raw rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path

import polars as pl

from forensics import catalog
from forensics.analysis import detectors
from forensics.core import schema, text
from forensics.core.errors import ForensicsError
from forensics.core.turns import Turn
from forensics.store import Store, checks, hive, snapshots

# the code a verdict depends on: every module of the detectors package (by name, so that moving a
# function between them counts), the escaping of their evidence, and how a stored row becomes the
# turn the detectors read (this module)
_SOURCES = sorted(Path(detectors.__file__).parent.glob("*.py")) + [Path(text.__file__), Path(__file__)]
_CODE = hashlib.sha256(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in _SOURCES)).hexdigest()


def version(th: detectors.Thresholds | None = None) -> str:
    """The verdict version of the detector code with thresholds `th`, by default `detectors.DEFAULT` as it is now."""
    th = detectors.DEFAULT if th is None else th
    return hashlib.sha256((_CODE + repr(th)).encode()).hexdigest()[:16]


DETECTOR_VERSION = version()

_KEY = schema.VERDICT_KEY
_SUPPLIED = tuple(c for c in schema.TURNS.columns if c.analysis)
_VERDICT_SCHEMA = {c: schema.TURNS.column(c).dtype for c in _KEY} | {c.name: c.dtype for c in _SUPPLIED}
_FIELDS = [f.name for f in dataclasses.fields(Turn)]


def _turn(row: dict) -> Turn:
    """The detectors' view of one stored row: the Turn a parser built, rebuilt from its columns."""
    t = Turn(**{f: row.get(f) for f in _FIELDS if f not in ("tool_calls", "offered_tools")})
    t.tool_calls = json.loads(row["tool_calls"]) if row.get("tool_calls") else []
    t.offered_tools = json.loads(row["offered_tool_params"]) if row.get("offered_tool_params") else None
    return t


def verdict_rows(turns: pl.DataFrame, th: detectors.Thresholds | None = None) -> pl.DataFrame:
    """Key and verdict columns for the stored turns of one input, each session assessed in `seq` order."""
    th = detectors.DEFAULT if th is None else th
    # a store written before a stored column existed: the detectors get NULL for it
    turns = turns.with_columns(
        pl.lit(None, dtype=c.dtype).alias(c.name) for c in schema.TURNS.stored if c.name not in turns.columns
    )
    if turns.select(_KEY).is_duplicated().any():
        raise ForensicsError(
            "turns of one input repeat (source, session_id, seq)",
            help="a bug in a transcript parser, not in your data: report it with this line",
        )
    sessions: dict[tuple, list[dict]] = {}
    for row in turns.iter_rows(named=True):
        sessions.setdefault((row["source"], row["session_id"]), []).append(row)
    out = []
    for rows in sessions.values():
        rows.sort(key=lambda r: r["seq"])
        for r, v in zip(rows, detectors.assess_session([_turn(r) for r in rows], th)):
            out.append(
                {
                    "source": r["source"],
                    "session_id": r["session_id"],
                    "seq": r["seq"],
                    "signatures": v.signatures,
                    "corruption_class": v.corruption_class,
                    "corrupted": v.corrupted,
                    "evidence": v.evidence,
                    "degraded_markup": v.degraded,
                }
            )
    return pl.DataFrame(out, schema=_VERDICT_SCHEMA)


def excerpts(turns: pl.DataFrame, th: detectors.Thresholds | None = None) -> dict[tuple, detectors.Excerpt]:
    """The evidence of stored turns before it was cut, by (source, session_id, turn_id): the same
    sessions assessed again, for a masking that masks whole values before it cuts them."""
    th = detectors.DEFAULT if th is None else th
    turns = turns.with_columns(
        pl.lit(None, dtype=c.dtype).alias(c.name) for c in schema.TURNS.stored if c.name not in turns.columns
    )
    sessions: dict[tuple, list[dict]] = {}
    for row in turns.iter_rows(named=True):
        sessions.setdefault((row["source"], row["session_id"]), []).append(row)
    out = {}
    for rows in sessions.values():
        rows.sort(key=lambda r: r["seq"])
        for r, ex in zip(rows, detectors.session_excerpts([_turn(r) for r in rows], th)):
            if ex is not None:
                out[(r["source"], r["session_id"], r["turn_id"])] = ex
    return out


def apply(turns: pl.DataFrame, th: detectors.Thresholds | None = None) -> pl.DataFrame:
    """Stored turns as the public `turns` view shows them: its columns, verdicts filled, rows in order."""
    v = verdict_rows(turns, th)
    base = turns.drop([c.name for c in _SUPPLIED if c.name in turns.columns])
    joined = base.join(v, on=list(_KEY), how="left", nulls_equal=True, maintain_order="left")
    return joined.select([pl.col(c.name).cast(c.dtype) for c in schema.TURNS.columns])


def ensure(
    store: Store, th: detectors.Thresholds | None = None, spare: catalog.Verdicts | None = None
) -> catalog.Verdicts:
    """Compute the verdicts the store lacks for the current version; return what the catalog joins.

    Files are written next to the store (tmp, then one rename); a store that cannot be written gets
    them in a temporary folder that lives as long as the returned value (or the `spare` of an
    earlier call, whose folder is used again), so it still answers.
    """
    ver = version(th)
    keep = spare.keep if spare is not None else None
    if not store.exists():
        return catalog.Verdicts(ver)
    folder = snapshots.verdicts_dir(store) / ver
    spare_root = Path(keep.name) if keep is not None else None
    by_input: dict[str, list[str]] = {}
    for f in store.table_files("turns"):
        by_input.setdefault(hive.key_of(f), []).append(f)
    for key, files in sorted(by_input.items()):
        name = f"{key}.parquet"
        # a damaged file is computed again: the turns it was computed from are in the store
        if any(
            p.exists() and checks.parquet_problem(p, full=True) is None
            for p in [folder / name] + ([spare_root / ver / name] if spare_root else [])
        ):
            continue
        rows = verdict_rows(pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed"), th)
        try:
            _write(rows, folder / name)
        except OSError:
            if keep is None:
                keep = tempfile.TemporaryDirectory(prefix="forensics-verdicts-")
                spare_root = Path(keep.name)
            _write(rows, spare_root / ver / name)
    try:
        current = snapshots.verdicts_dir(store) / "CURRENT"
        if not current.exists() or current.read_text().strip() != ver:
            _write_text(current, ver + "\n")
    except OSError:
        pass  # read-only: the value returned says which version this command reads
    return catalog.Verdicts(ver, spare_root / ver if spare_root else None, keep)


def _write(df: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    df.write_parquet(tmp)
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
