"""The one schema reference: every table, every column, what it means.

`forensics tables` prints it, the store casts every batch to it before writing, and the tests
check the Parquet files against it. Add a column here and everything else follows.
"""

from __future__ import annotations

import dataclasses

import polars as pl

TS = pl.Datetime("us", "UTC")
RANKS = ("dp_rank", "pp_rank", "attn_cp_rank", "moe_dp_rank", "tp_rank", "ep_rank")


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType | type
    doc: str


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]
    view: bool = False  # derived in DuckDB from other tables (never written by parsers)

    @property
    def polars_schema(self) -> dict:
        return {c.name: c.dtype for c in self.columns}

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


def _rank_columns() -> tuple[Column, ...]:
    return tuple(
        Column(r, pl.Int32, f"`{r.removesuffix('_rank').upper()}<n>` rank tag of the line, NULL when absent")
        for r in RANKS
    )


_LINE_COLS = (
    Column("ts", TS, "UTC time of the line (microseconds); from the best clock the line carries"),
    Column("ts_raw", pl.Utf8, "the timestamp text as written in the line"),
    Column("prefix", pl.Utf8, "outer prefix added by a log shipper (k8s CRI, docker, Kibana, tqdm), stripped"),
    Column("host", pl.Utf8, "host the file came from (--host, else the file's folder or name)"),
    Column("role", pl.Utf8, "'prefill' | 'decode' | 'unified' | 'unknown' (--role, else inferred)"),
)
_SOURCE_COLS = (
    Column("source_file", pl.Utf8, "input file (archive members as archive!member)"),
    Column("line_no", pl.Int64, "1-based line number in the decompressed file; the order within a second"),
)

FILES = Table(
    "files",
    "One row per ingested input file. lines = parsed_lines + continuation_lines + unparsed_lines.",
    (
        Column("path", pl.Utf8, "input file as given to ingest (archive members as archive!member)"),
        Column("sha256", pl.Utf8, "sha256 of the decompressed content; the same content is ingested once"),
        Column("bytes", pl.Int64, "decompressed size in bytes"),
        Column("format", pl.Utf8, "parser that read it (see `forensics formats`)"),
        Column("host", pl.Utf8, "host name used for its rows"),
        Column("role", pl.Utf8, "server role used for its rows"),
        Column("lines", pl.Int64, "input lines (records, for structured formats)"),
        Column("parsed_lines", pl.Int64, "lines that became a row"),
        Column("continuation_lines", pl.Int64, "lines folded into the row above (tracebacks, partial records)"),
        Column("unparsed_lines", pl.Int64, "lines in the unparsed table"),
        Column("first_ts", TS, "earliest timestamp seen"),
        Column("last_ts", TS, "latest timestamp seen"),
        Column("tz", pl.Utf8, "zone assumed for naive timestamps"),
        Column("run", pl.Utf8, "run label given with ingest --run"),
        Column("ingested_at", TS, "when the file was ingested"),
    ),
)

BATCHES = Table(
    "batches",
    "One row per scheduler stats line (`Prefill batch` / `Decode batch`), every era 2024-2026.",
    _LINE_COLS
    + _rank_columns()
    + (
        Column("kind", pl.Utf8, "'prefill' | 'decode'"),
        Column("new_seq", pl.Int64, "#new-seq: requests in this prefill batch"),
        Column("new_token", pl.Int64, "#new-token: input tokens computed in this prefill batch"),
        Column("cached_token", pl.Int64, "#cached-token: prefix-cache hit tokens"),
        Column("cache_hit_rate", pl.Float64, "cache hit rate (2024 era), as a fraction"),
        Column("token_usage", pl.Float64, "token usage / full token usage: KV pool occupancy 0..1"),
        Column("num_token", pl.Int64, "#token / #full token: KV tokens in use (decode)"),
        Column("running_req", pl.Int64, "#running-req"),
        Column("queue_req", pl.Int64, "#queue-req: waiting queue length"),
        Column("pending_token", pl.Int64, "#pending-token: tokens waiting to be prefilled (0.5.15+)"),
        Column(
            "bootstrap_req",
            pl.Int64,
            "prefill bootstrap queue: #unbootstrapped-req (0.4), #prealloc-req on prefill (0.5.3-2026.04), #bootstrap-req",
        ),
        Column("inflight_req", pl.Int64, "prefill transfers in flight: #transferring-req (0.4), #inflight-req"),
        Column("optimistic_req", pl.Int64, "#optimistic-req (prefill, 0.5.23)"),
        Column("prealloc_req", pl.Int64, "#prealloc-req on decode: the decode prealloc queue"),
        Column("transfer_req", pl.Int64, "#transfer-req: decode transfer queue"),
        Column("retracted_req", pl.Int64, "#retracted-req (decode)"),
        Column("host_receive_req", pl.Int64, "#host-receive-req (decode, 0.5.23)"),
        Column("prealloc_usage", pl.Float64, "pre-allocated usage (decode)"),
        Column("gen_throughput", pl.Float64, "gen throughput (token/s), decode"),
        Column("input_throughput", pl.Float64, "input throughput (token/s), prefill"),
        Column("cuda_graph", pl.Boolean, "cuda/cpu/npu/musa graph flag"),
        Column("graph_backend", pl.Utf8, "which graph key was printed: 'cuda' | 'cpu' | 'npu' | 'musa'"),
        Column("accept_len", pl.Float64, "speculative accept len"),
        Column("accept_rate", pl.Float64, "speculative accept rate"),
        Column("extra", pl.List(pl.Struct({"key": pl.Utf8, "value": pl.Utf8})), "every other key: value of the line (a MAP in SQL)"),
        Column("tail", pl.Utf8, "text that is not a key: value item (e.g. a truncated last item)"),
        Column("truncated", pl.Boolean, "the line was cut (last line of a file without newline)"),
    )
    + _SOURCE_COLS,
)

EVENTS = Table(
    "events",
    "One row per log record that is not a stats line: requests, failures, aborts, errors, access lines, "
    "NIXL / UCX / glog / NCCL lines and generic sglang messages (kind 'log').",
    _LINE_COLS
    + _rank_columns()
    + (
        Column(
            "kind",
            pl.Utf8,
            "request_received | request_finished | transfer_failed | bootstrap_failed | abort | watchdog_timeout | "
            "health_check_failed | exception | corruption_detected | checksum_mismatch | collective_timeout | "
            "http_access | nixl_error | ucx_error | ... (see `forensics kinds`); 'log' for other messages",
        ),
        Column("severity", pl.Utf8, "'debug' | 'info' | 'warning' | 'error' | 'fatal'"),
        Column("source", pl.Utf8, "line family: sglang | uvicorn | glog | ucx | c10d | nccl | nixl | request_log"),
        Column("rid", pl.Utf8, "request id on this server (prefill and decode rids of one request may differ)"),
        Column("bootstrap_room", pl.Int64, "PD bootstrap room (63-bit); the join key across servers"),
        Column("reason", pl.Utf8, "normalised failure reason: aborted, waiting_timeout, bootstrap_timeout, node_failure, ..."),
        Column("finish_reason", pl.Utf8, "finish reason type of a finished request: stop | length | abort"),
        Column("prompt_tokens", pl.Int64, "prompt tokens (request lines)"),
        Column("completion_tokens", pl.Int64, "completion tokens (finished requests)"),
        Column("cached_tokens", pl.Int64, "prefix-cache tokens (finished requests)"),
        Column("e2e_latency", pl.Float64, "seconds from receive to finish (finished requests)"),
        Column("http_status", pl.Int32, "HTTP status (access lines, abort reasons)"),
        Column("http_method", pl.Utf8, "HTTP method (access lines)"),
        Column("http_path", pl.Utf8, "HTTP path (access lines)"),
        Column("peer", pl.Utf8, "remote address, agent or client named by the line"),
        Column("message", pl.Utf8, "the message text after the prefix"),
        Column("exc_type", pl.Utf8, "exception type closing the traceback, if any"),
        Column("traceback", pl.Utf8, "continuation lines (traceback) folded into this record"),
        Column("truncated", pl.Boolean, "the line was cut (last line of a file without newline)"),
    )
    + _SOURCE_COLS,
)

UNPARSED = Table(
    "unparsed",
    "Every input line no parser could read, with why. Nothing is dropped.",
    (
        Column("source_file", pl.Utf8, "input file"),
        Column("line_no", pl.Int64, "1-based line number"),
        Column("line", pl.Utf8, "the raw line (invalid bytes escaped as \\xNN, cut at 64 KiB)"),
        Column("reason", pl.Utf8, "why: unrecognised | truncated | invalid_json | schema:<field> | ..."),
        Column("format", pl.Utf8, "parser that gave up on it"),
    ),
)

# Parsers of other issues append their tables here (transfers, telemetry, replies, ...).
TABLES: dict[str, Table] = {t.name: t for t in (FILES, BATCHES, EVENTS, UNPARSED)}


def register(table: Table) -> Table:
    TABLES[table.name] = table
    return table


def conform(table: str, df: pl.DataFrame) -> pl.DataFrame:
    """Return `df` with exactly the table's columns, in order and type; missing ones are NULL."""
    t = TABLES[table]
    cols = []
    for c in t.columns:
        if c.name in df.columns:
            cols.append(pl.col(c.name).cast(c.dtype, strict=False))
        else:
            cols.append(pl.lit(None, dtype=c.dtype).alias(c.name))
    return df.select(cols)
