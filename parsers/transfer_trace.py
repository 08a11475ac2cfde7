"""The JSON Lines KV transfer trace of docs/formats/TRANSFER_TRACE.md, one row per event.

Its "Reader rules" are followed exactly. Two paths give the same tables (tests/test_trace_fast.py):

- the field splitter parsers/_fasttrace.c reads each line once into Arrow column buffers. It takes
  the lines it can give exactly (flat objects, no escapes, every check passing) and hands the rest
  back by position;
- the reference path, where JSON is parsed by DuckDB (yyjson), which keeps integers exact, so a
  63-bit `room` never passes through a float; each block of lines is one vectorised query. It
  parses the lines handed back, and every line when the extension is not built or
  FORENSICS_NATIVE=0. Its only per-line Python is for checksums wider than 128 bits.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import polars as pl

from forensics.core import native
from forensics.parsers.base import Batch, Context, Sample, Source, Written
from forensics.parsers.lines import (
    CUT_LINE,
    MAX_LINE_CHARS,
    RawBlock,
    frame,
    left_out,
    load,
    read_raw_blocks,
    with_flags,
)

# None without a compiler at install time (setup.py): the reference path parses every line
_fasttrace = native.built("_fasttrace")

if TYPE_CHECKING:
    import duckdb

name = "transfer_trace"
description = (
    "KV transfer trace (JSON Lines, docs/formats/TRANSFER_TRACE.md): post/done/fail/notif/abort/checksum per unit"
)

KINDS = ("kv", "aux", "state", "index_k")
EVENTS = ("post", "done", "fail", "notif", "abort", "checksum")
KNOWN_FIELDS = (
    "ts",
    "host",
    "pid",
    "side",
    "engine_rank",
    "dp_rank",
    "room",
    "rid",
    "kind",
    "chunk",
    "is_last",
    "event",
    "bytes",
    "status",
    "peer",
    "checksum",
    "error",
)
# docs/formats/NIXL.md, "Status codes": old NIXL builds print statuses as integers.
STATUS_NAMES = {
    1: "NIXL_IN_PROG",
    0: "NIXL_SUCCESS",
    -1: "NIXL_ERR_NOT_POSTED",
    -2: "NIXL_ERR_INVALID_PARAM",
    -3: "NIXL_ERR_BACKEND",
    -4: "NIXL_ERR_NOT_FOUND",
    -5: "NIXL_ERR_MISMATCH",
    -6: "NIXL_ERR_NOT_ALLOWED",
    -7: "NIXL_ERR_REPOST_ACTIVE",
    -8: "NIXL_ERR_UNKNOWN",
    -9: "NIXL_ERR_NOT_SUPPORTED",
    -10: "NIXL_ERR_REMOTE_DISCONNECT",
    -11: "NIXL_ERR_CANCELED",
    -12: "NIXL_ERR_NO_TELEMETRY",
}
# The order in which a line's fields are checked: the reason names the first one that fails.
CHECK_ORDER = (
    "ts",
    "host",
    "side",
    "engine_rank",
    "room",
    "kind",
    "event",
    "pid",
    "dp_rank",
    "chunk",
    "is_last",
    "bytes",
    "checksum",
)


def _sql_list(items) -> str:
    return ", ".join("'" + s.replace("'", "''") + "'" for s in items)


def _int_ok(f: str) -> str:
    """SQL: the field is absent/null, a JSON integer, or a float with an integral value."""
    return (
        f"(t_{f} IS NULL OR t_{f} = 'NULL' OR t_{f} IN ('BIGINT', 'UBIGINT') "
        f"OR (t_{f} = 'DOUBLE' AND TRY_CAST(s_{f} AS DOUBLE) = floor(TRY_CAST(s_{f} AS DOUBLE))))"
    )


def _int_val(f: str, typ: str) -> str:
    return (
        f"CASE WHEN t_{f} IN ('BIGINT', 'UBIGINT') THEN TRY_CAST(s_{f} AS {typ}) "
        f"WHEN t_{f} = 'DOUBLE' THEN TRY_CAST(TRY_CAST(s_{f} AS DOUBLE) AS {typ}) END"
    )


def _query() -> str:
    paths = _sql_list(f'$."{f}"' for f in KNOWN_FIELDS)
    # one parse per line for all fields: a list of paths is extracted in a single pass
    extract = ",\n    ".join(f"_t[{i + 1}] AS t_{f}, _s[{i + 1}] AS s_{f}" for i, f in enumerate(KNOWN_FIELDS))
    patch = json.dumps({f: None for f in KNOWN_FIELDS})
    status_case = " ".join(f"WHEN {k} THEN '{v}'" for k, v in STATUS_NAMES.items())
    present = lambda f: f"(t_{f} IS NOT NULL AND t_{f} <> 'NULL')"  # noqa: E731
    checks = {
        "ts": "ts_us IS NOT NULL",
        "host": "t_host = 'VARCHAR' AND s_host <> ''",
        "side": "t_side = 'VARCHAR' AND s_side IN ('prefill', 'decode')",
        "engine_rank": f"{present('engine_rank')} AND {_int_ok('engine_rank')} AND engine_rank IS NOT NULL",
        "room": "room_h IS NOT NULL AND room_h >= 0 AND room_h < 9223372036854775808",
        "kind": "t_kind = 'VARCHAR'",
        "event": "t_event = 'VARCHAR'",
        "pid": _int_ok("pid"),
        "dp_rank": _int_ok("dp_rank"),
        "chunk": _int_ok("chunk"),
        "is_last": f"NOT {present('is_last')} OR is_last IS NOT NULL",
        "bytes": f"NOT {present('bytes')} OR bytes IS NOT NULL",
        "checksum": f"CASE WHEN {present('checksum')} THEN checksum IS NOT NULL ELSE s_event IS DISTINCT FROM 'checksum' END",
    }
    reason = (
        "CASE " + " ".join(f"WHEN NOT coalesce({checks[f]}, false) THEN 'schema:{f}'" for f in CHECK_ORDER) + " END"
    )
    return f"""
WITH raw AS MATERIALIZED (
  SELECT line_no, line, json_type(line, [{paths}]) AS _t, json_extract_string(line, [{paths}]) AS _s FROM objs
),
x AS (
  SELECT line_no, line,
    {extract}
  FROM raw
),
-- the coercions of "Reader rules", kept apart from the checks so that each rule reads once
c AS MATERIALIZED (
  SELECT *,
    CASE WHEN t_ts IN ('BIGINT', 'UBIGINT', 'DOUBLE')
           THEN TRY_CAST(round(coalesce(TRY_CAST(s_ts AS DECIMAL(38, 9)), TRY_CAST(s_ts AS DOUBLE)) * 1000000) AS BIGINT)
         WHEN t_ts = 'VARCHAR' THEN epoch_us(TRY_CAST(s_ts AS TIMESTAMPTZ)) END AS ts_us,
    t_ts = 'VARCHAR' AND NOT regexp_matches(s_ts, '(Z|z|[+-]\\d{{2}}(:?\\d{{2}})?)$') AS ts_naive,
    CASE WHEN t_room IN ('BIGINT', 'UBIGINT') THEN TRY_CAST(s_room AS HUGEINT)
         WHEN t_room = 'VARCHAR' AND regexp_matches(s_room, '^[0-9]{{1,19}}$') THEN TRY_CAST(s_room AS HUGEINT)
    END AS room_h,
    {_int_val("engine_rank", "INTEGER")} AS engine_rank,
    {_int_val("pid", "BIGINT")} AS pid,
    {_int_val("dp_rank", "INTEGER")} AS dp_rank,
    {_int_val("chunk", "INTEGER")} AS chunk,
    CASE WHEN t_is_last = 'BOOLEAN' THEN s_is_last = 'true'
         WHEN t_is_last IN ('BIGINT', 'UBIGINT') AND s_is_last IN ('0', '1') THEN s_is_last = '1' END AS is_last,
    CASE WHEN t_bytes IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN {_int_val("bytes", "BIGINT")}
         WHEN t_bytes = 'VARCHAR' AND regexp_matches(s_bytes, '^[0-9]{{1,19}}$') THEN TRY_CAST(s_bytes AS BIGINT)
    END AS bytes,
    CASE WHEN t_checksum = 'VARCHAR' AND regexp_matches(s_checksum, '^(0[xX])?[0-9a-fA-F]+$')
         THEN lower(regexp_replace(s_checksum, '^0[xX]', '')) END AS checksum
  FROM x
),
v AS (SELECT *, {reason} AS reason FROM c)
SELECT line_no, line, reason,
  make_timestamptz(ts_us) AS ts, s_ts AS ts_raw, ts_naive,
  s_host AS host, pid, s_side AS side, engine_rank, dp_rank,
  TRY_CAST(room_h AS BIGINT) AS bootstrap_room,
  s_rid AS rid, s_kind AS kind, chunk, is_last, s_event AS event,
  s_kind NOT IN ({_sql_list(KINDS)}) OR s_event NOT IN ({_sql_list(EVENTS)}) AS unknown_enum,
  bytes,
  CASE WHEN t_status IN ('BIGINT', 'UBIGINT') THEN CASE TRY_CAST(s_status AS BIGINT) {status_case} ELSE 'BAD_STATUS' END
       WHEN t_status = 'NULL' THEN NULL ELSE s_status END AS status,
  CASE WHEN t_status IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN s_status END AS status_raw,
  CASE WHEN t_peer <> 'NULL' THEN s_peer END AS peer,
  CASE WHEN t_error <> 'NULL' THEN s_error END AS error,
  checksum,
  -- the hex cast to UHUGEINT is two orders of magnitude slower than to UBIGINT: 64-bit checksums
  -- (xxh64, the common case) take the cheap one
  CASE WHEN length(ltrim(checksum, '0')) <= 16
       THEN CAST(TRY_CAST('0x' || coalesce(nullif(ltrim(checksum, '0'), ''), '0') AS UBIGINT) AS VARCHAR)
       WHEN length(ltrim(checksum, '0')) <= 32
       THEN CAST(TRY_CAST('0x' || ltrim(checksum, '0') AS UHUGEINT) AS VARCHAR) END AS checksum_int,
  nullif(json_merge_patch(line, '{patch}'), '{{}}') AS extra
FROM v
ORDER BY line_no
"""


QUERY = _query()


def sniff(head: bytes, path: str) -> float:
    text = head.decode("utf-8", "replace")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.lstrip().startswith("{") and '"room"' in first and '"event"' in first:
        return 0.95
    return 0.0


def _block(con: "duckdb.DuckDBPyConnection", df: pl.DataFrame, ctx: Context, path: str) -> Batch:
    blank = df["line"].str.strip_chars() == ""
    df = df.filter(~blank)
    n_blank = int(blank.sum())
    valid = con.sql(
        "SELECT line_no, json_valid(line) AS ok, CASE WHEN json_valid(line) THEN json_type(line) END AS jt "
        "FROM df ORDER BY line_no"
    ).pl()
    df = df.join(valid, on="line_no", how="left")
    bad = df.filter(~pl.col("ok") | (pl.col("jt") != "OBJECT")).with_columns(
        reason=pl.when(~pl.col("ok") & pl.col("line").str.contains(CUT_LINE))
        .then(pl.lit("line_too_long"))
        .when(~pl.col("ok") & pl.col("unterminated"))
        .then(pl.lit("truncated"))
        .when(~pl.col("ok"))
        .then(pl.lit("invalid_json"))
        .otherwise(pl.lit("not_object"))
    )
    objs = df.filter(pl.col("ok") & (pl.col("jt") == "OBJECT")).select("line_no", "line")  # noqa: F841 (DuckDB scans it)
    rows = con.sql(QUERY).pl()
    wide = rows.filter(pl.col("checksum").is_not_null() & pl.col("checksum_int").is_null() & pl.col("reason").is_null())
    if wide.height:
        # checksums wider than 128 bits (sha256 kept whole): the only per-row Python, on rare rows
        ints = {r: str(int(c, 16)) for r, c in zip(wide["line_no"], wide["checksum"])}
        rows = rows.with_columns(
            checksum_int=pl.coalesce(
                pl.col("checksum_int"), pl.col("line_no").replace_strict(ints, default=None, return_dtype=pl.Utf8)
            )
        )
    schema_bad = rows.filter(pl.col("reason").is_not_null()).select("line_no", "line", "reason")
    good = rows.filter(pl.col("reason").is_null()).drop("line", "reason").with_columns(source_file=pl.lit(path))
    unparsed = (
        pl.concat([bad.select("line_no", "line", "reason"), schema_bad])
        .sort("line_no")
        .with_columns(line=pl.col("line").str.slice(0, MAX_LINE_CHARS), source_file=pl.lit(path), format=pl.lit(name))
    )
    # "Reader rules" skip blank lines without a row or an error; they count as continuation so lines add up.
    ctx.account(parsed=good.height, continuation=n_blank, unparsed=unparsed.height)
    if good.height:
        ctx.widen(good["ts"].min(), good["ts"].max())
    return {"transfer_events": good, "unparsed": unparsed}


def fast_enabled() -> bool:
    """Whether the splitter runs here (`forensics.core.native.why_not` says why not)."""
    return native.enabled("_fasttrace")


# the splitter's columns, in the reference query's order, with their Arrow types
_FAST_COLS = (
    ("ts", "ts"),
    ("ts_raw", "s"),
    ("ts_naive", "b"),
    ("host", "s"),
    ("pid", "i64"),
    ("side", "s"),
    ("engine_rank", "i32"),
    ("dp_rank", "i32"),
    ("bootstrap_room", "i64"),
    ("rid", "s"),
    ("kind", "s"),
    ("chunk", "i32"),
    ("is_last", "b"),
    ("event", "s"),
    ("unknown_enum", "b"),
    ("bytes", "i64"),
    ("status", "s"),
    ("status_raw", "s"),
    ("peer", "s"),
    ("error", "s"),
    ("checksum", "s"),
    ("checksum_int", "s"),
    ("extra", "s"),
)


def _fast_rows(d: dict) -> pl.DataFrame:
    """The splitter's buffers as the frame the reference query gives, less `line` and `reason`."""
    import pyarrow as pa

    n = d["n"]
    types = {"ts": pa.timestamp("us", tz="UTC"), "i64": pa.int64(), "i32": pa.int32(), "b": pa.bool_()}
    arrays = [pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(d["line_no"])])]
    for col, kind in _FAST_COLS:
        valid = pa.py_buffer(d[f"{col}.valid"])
        if kind == "s":
            arrays.append(
                pa.Array.from_buffers(
                    pa.string(), n, [valid, pa.py_buffer(d[f"{col}.off"]), pa.py_buffer(d[f"{col}.data"])]
                )
            )
        else:
            arrays.append(pa.Array.from_buffers(types[kind], n, [valid, pa.py_buffer(d[col])]))
    return pl.from_arrow(pa.Table.from_arrays(arrays, names=["line_no", *(c for c, _ in _FAST_COLS)]))


def _lines_at(d: dict, key: str, raw: RawBlock) -> pl.DataFrame:
    """The lines of `raw` the splitter listed under `key` (`fb`, `bad`), as `parsers.lines.frame` gives them."""
    import numpy as np

    body = raw.body
    starts = np.frombuffer(d[f"{key}.start"], dtype=np.int64).tolist()
    ends = np.frombuffer(d[f"{key}.end"], dtype=np.int64).tolist()
    text = str(b"\n".join(body[s:e] for s, e in zip(starts, ends)), "utf-8", "backslashreplace")
    lines = pl.Series("line", [text], dtype=pl.Utf8).str.split("\n").explode()
    return with_flags(
        pl.DataFrame(
            {
                "line_no": pl.Series(np.frombuffer(d[f"{key}.line_no"], dtype=np.int64)),
                "line": lines.str.strip_suffix("\r"),
            }
        ),
        raw,
    )


class _Reference:
    """The DuckDB connection of the reference path, opened on the first line that needs it."""

    def __init__(self):
        self._con = None

    @property
    def con(self) -> "duckdb.DuckDBPyConnection":
        if self._con is None:
            import duckdb  # only when a trace needs it: ingest of server logs alone need not load it

            self._con = duckdb.connect(":memory:")
            self._con.execute("SET TimeZone = 'UTC'")
        return self._con

    def close(self) -> None:
        if self._con is not None:
            self._con.close()


def _fast_block(ref: _Reference, d: dict, raw: RawBlock, ctx: Context, path: str) -> Batch:
    """The batch of `raw` from what the splitter made of it (`d`), handed-back lines parsed by `ref`."""
    good = _fast_rows(d).with_columns(source_file=pl.lit(path))
    unparsed = _NO_UNPARSED
    if d["bad.n"]:
        unparsed = _lines_at(d, "bad", raw).select(
            "line_no",
            line=pl.col("line").str.slice(0, MAX_LINE_CHARS),
            reason=pl.when(pl.col("unterminated")).then(pl.lit("truncated")).otherwise(pl.lit("invalid_json")),
            source_file=pl.lit(path),
            format=pl.lit(name),
        )
    ctx.account(parsed=good.height, continuation=d["blank"], unparsed=unparsed.height)
    if good.height:
        ctx.widen(good["ts"].min(), good["ts"].max())
    if not d["fb.n"]:
        return {"transfer_events": good, "unparsed": unparsed}
    out = _block(ref.con, _lines_at(d, "fb", raw), ctx, path)
    return {
        "transfer_events": pl.concat([good, out["transfer_events"]]).sort("line_no"),
        "unparsed": pl.concat([unparsed, out["unparsed"]]).sort("line_no"),
    }


_NO_UNPARSED = pl.DataFrame(
    schema={"line_no": pl.Int64, "line": pl.Utf8, "reason": pl.Utf8, "source_file": pl.Utf8, "format": pl.Utf8}
)


def _blocks(stream, ctx: Context) -> Iterator[RawBlock]:
    return read_raw_blocks(stream, ctx.scan.block_bytes, ctx.on_progress, max_lines=ctx.scan.max_block_lines)


def _one_block(ref: _Reference, raw: RawBlock, ctx: Context, path: str) -> Batch:
    if not fast_enabled():
        return _block(ref.con, frame(raw), ctx, path)
    return _fast_block(ref, _fasttrace.scan(raw.body, raw.line_no, raw.lines), raw, ctx, path)


def _batches(stream, ctx: Context, path: str, ref: _Reference) -> Iterator[Batch]:
    if not fast_enabled():
        for raw in _blocks(stream, ctx):
            yield _block(ref.con, frame(raw), ctx, path)
        return
    from concurrent.futures import ThreadPoolExecutor

    # the splitter runs without the GIL: one block is split while the next is read (and hashed)
    with ThreadPoolExecutor(1, thread_name_prefix="fasttrace") as pool:
        pending = None
        for raw in _blocks(stream, ctx):
            split = pool.submit(_fasttrace.scan, raw.body, raw.line_no, raw.lines)
            if pending is not None:
                yield _fast_block(ref, pending[1].result(), pending[0], ctx, path)
            pending = (raw, split)
        if pending is not None:
            yield _fast_block(ref, pending[1].result(), pending[0], ctx, path)


@dataclasses.dataclass
class _PassInfo:
    """What a block parsed in a worker sends back besides its rows (`_pooled_block`)."""

    parsed: int
    continuation: int
    unparsed: int
    first_ts: object
    last_ts: object
    sides: set[str]
    hosts: set[str]


def _seen(batch: Batch) -> tuple[set[str], set[str]]:
    ev = batch["transfer_events"]
    return set(ev["side"].unique().to_list()), set(ev["host"].unique().to_list())


# A worker's reference path, kept from block to block: a connection opened for each block that
# hands lines back would nearly double what the block costs there.
_WORKER_REF = _Reference()


def _pooled_block(raws: list[RawBlock], ctx: Context, path: str):
    """One pass in a worker (`_pooled`), of one block as ingest's passes go (a list of blocks):
    its batch, written there, and its `_PassInfo`."""
    (out,) = [_one_block(_WORKER_REF, load(raw), ctx, path) for raw in raws]
    info = _PassInfo(
        ctx.parsed_lines, ctx.continuation_lines, ctx.unparsed_lines, ctx.first_ts, ctx.last_ts, *_seen(out)
    )
    return out, info, True


def _pooled(stream, ctx: Context, path: str, sides: set[str], hosts: set[str]) -> Iterator[Written]:
    """The blocks on ingest's worker processes (`ctx.pool`), each written where it ran: this
    process reads them (and hashes them) and adds up what each sends back, in file order. A
    block's lines are numbered here, so a worker's line numbers are the file's."""
    pool = ctx.pool
    # two blocks more than workers in flight: a worker that finishes finds the next one waiting
    window = pool.workers + 2
    queue: collections.deque = collections.deque()

    def merge_first() -> Written:
        # the block leaves the queue only once it has ended: a signal in the wait leaves it there
        # for the `finally` below, which waits for it before the input's folder goes
        got, info = queue[0].result()
        queue.popleft()
        ctx.account(parsed=info.parsed, continuation=info.continuation, unparsed=info.unparsed)
        ctx.widen(info.first_ts, info.last_ts)
        sides.update(info.sides)
        hosts.update(info.hosts)
        return got

    try:
        for part, raw in enumerate(_blocks(stream, ctx)):
            bctx = dataclasses.replace(
                ctx,
                lines=0,
                parsed_lines=0,
                continuation_lines=0,
                unparsed_lines=0,
                first_ts=None,
                last_ts=None,
                notes=[],
                pool=None,
                on_progress=None,
            )
            queue.append(pool.submit(part, _pooled_block, [left_out(raw)], bctx, path))
            del raw
            if len(queue) >= window:
                yield merge_first()
        while queue:
            yield merge_first()
    finally:
        # stopped early (a failed block, a signal): the input's folder is removed next, so the
        # blocks still running finish first
        for fut in queue:
            if not fut.cancel():
                fut.exception()


def parse(source: Source, ctx: Context) -> Iterator[Batch | Written]:
    sides: set[str] = set()
    hosts: set[str] = set()
    n_blank_before = ctx.continuation_lines
    ref = _Reference()
    try:
        with source.open() as stream:
            if ctx.pool is not None:
                yield from _pooled(stream, ctx, source.path, sides, hosts)
            else:
                for out in _batches(stream, ctx, source.path, ref):
                    s, h = _seen(out)
                    sides |= s
                    hosts |= h
                    yield out
    finally:
        ref.close()
    if len(sides) == 1:
        ctx.inferred_role = sides.pop()
    if hosts:
        # the trace names its emitter: that beats a host guessed from the folder (files.host follows it)
        ctx.inferred_host = ", ".join(sorted(hosts))
    if ctx.continuation_lines > n_blank_before:
        ctx.notes.append(f"{ctx.continuation_lines - n_blank_before} blank lines skipped (counted as continuation)")


_P = '"host":"node-p0","pid":1842217,"side":"prefill","engine_rank":3,"dp_rank":3'
_D = '"host":"node-d1","pid":90412,"side":"decode","engine_rank":3'
samples = [
    Sample(
        "spec_clean_room_number_and_string_forms",
        f'{{"ts":1793354400.512301,{_P},"room":4127750395128840213,"rid":"7d1c","kind":"kv","chunk":0,"is_last":true,'
        '"event":"checksum","bytes":603979776,"checksum":"9a41c07e55d2b3f1","checksum_algo":"xxh64"}\n'
        f'{{"ts":"2026-10-30T10:00:00.533102+00:00",{_D},"room":"4127750395128840213","kind":"kv","chunk":0,'
        '"is_last":true,"event":"checksum","bytes":603979776,"checksum":"0x9A41C07E55D2B3F1","checksum_algo":"xxh64"}\n',
        {
            "transfer_events": [
                {
                    "bootstrap_room": 4127750395128840213,
                    "event": "checksum",
                    "checksum": "9a41c07e55d2b3f1",
                    "checksum_int": "11115377004165379057",
                    "extra": '{"checksum_algo":"xxh64"}',
                    "ts_naive": False,
                    "engine_rank": 3,
                    "is_last": True,
                    "unknown_enum": False,
                },
                {
                    "bootstrap_room": 4127750395128840213,
                    "checksum": "9a41c07e55d2b3f1",
                    "checksum_int": "11115377004165379057",
                    "side": "decode",
                    "dp_rank": None,
                },
            ]
        },
    ),
    Sample(
        "spec_fail_int_status_unknown_enum",
        f'{{"ts":1793354401.41899,{_P},"room":6593551520068383758,"kind":"kv","chunk":0,"is_last":1,"event":"fail",'
        '"status":-3,"error":"getXferStatus: backend \'UCX\' returned error status NIXL_ERR_BACKEND"}\n'
        f'{{"ts":"2026-10-30T10:00:01",{_D},"room":6593551520068383758,"kind":"mamba","event":"notif"}}\n',
        {
            "transfer_events": [
                {
                    "event": "fail",
                    "status": "NIXL_ERR_BACKEND",
                    "status_raw": "-3",
                    "is_last": True,
                    "unknown_enum": False,
                },
                {"kind": "mamba", "unknown_enum": True, "ts_naive": True, "chunk": None},
            ]
        },
    ),
    Sample(
        "reader_rules_unparsed_reasons",
        "\n"
        "not json\n"
        "[1, 2]\n"
        f'{{"ts":1793354400.5,{_P},"room":1.5e3,"kind":"kv","event":"post"}}\n'
        f'{{"ts":1793354400.5,{_P},"room":-1,"kind":"kv","event":"post"}}\n'
        f'{{"ts":1793354400.5,{_P},"room":9223372036854775808,"kind":"kv","event":"post"}}\n'
        f'{{"ts":1793354400.5,"host":"node-p0","side":"router","engine_rank":0,"room":1,"kind":"kv","event":"post"}}\n'
        f'{{"ts":1793354400.5,{_P},"room":1,"kind":"kv","event":"checksum","checksum":"xyz"}}\n'
        f'{{"ts":true,{_P},"room":1,"kind":"kv","event":"post"}}\n'
        f'{{"ts":1793354400.5,{_P},"room":1,"kind":"kv","event":"post","bytes":"12"}}\n'
        f'{{"ts":1793354400.5,{_P},"room":1,"kind":"kv"',
        {
            "transfer_events": [{"bytes": 12, "bootstrap_room": 1}],
            "unparsed": [
                {"line_no": 2, "reason": "invalid_json"},
                {"line_no": 3, "reason": "not_object"},
                {"line_no": 4, "reason": "schema:room"},
                {"line_no": 5, "reason": "schema:room"},
                {"line_no": 6, "reason": "schema:room"},
                {"line_no": 7, "reason": "schema:side"},
                {"line_no": 8, "reason": "schema:checksum"},
                {"line_no": 9, "reason": "schema:ts"},
                {"line_no": 11, "reason": "truncated", "format": "transfer_trace"},
            ],
        },
    ),
]
