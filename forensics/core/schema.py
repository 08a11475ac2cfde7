"""The one schema reference of the stored tables: every table, every column, what it means.

`forensics tables` prints it, the store casts every batch to it before writing, and the tests
check the Parquet files against it. Add a column here and everything else follows. The derived
views and macros are documented by the headers of their SQL (forensics/catalog/views/*.sql, read
by forensics.catalog.model), which `forensics tables` lists after these.
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
    analysis: bool = False  # supplied by an analysis step over the stored rows, never written at ingest


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]  # the public view, in its order: what `forensics tables` documents
    view: bool = False  # derived in DuckDB from other tables (never written by parsers): forensics.catalog.model
    # written at ingest for an analysis step to read, and left out of the public view
    stored_only: tuple[Column, ...] = ()

    @property
    def stored(self) -> tuple[Column, ...]:
        """The columns a writer puts in Parquet: the public ones an analysis does not supply, then the stored-only."""
        return tuple(c for c in self.columns if not c.analysis) + self.stored_only

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
    Column(
        "ts_raw",
        pl.Utf8,
        "the timestamp text as written in the line; null on a line without a clock of its own "
        "(a crash dump, a bare message or stats line), whose ts was placed (ts_placed)",
    ),
    Column(
        "ts_placed",
        pl.Utf8,
        "NULL where the line's own clock dated it; for a line without one (a crash dump, a bare message or stats "
        "line), where its ts comes from: 'line_above' (the nearest timed line above it in the same input), "
        "'line_below' (the nearest below, when none is above), 'file_time' (the input has no timed line: its file's "
        "modification time; an event only). NULL too in stores written before it",
    ),
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
    "One row per input file ingest found: read by a parser (status 'ingested'; lines = parsed_lines + "
    "continuation_lines + unparsed_lines) or refused as not a log (status 'skipped': format, host, role and "
    "the line counts are NULL, skip_kind and skip_reason say why).",
    (
        Column("path", pl.Utf8, "input file as given to ingest (archive members as archive!member)"),
        Column(
            "sha256",
            pl.Utf8,
            "sha256 of the decompressed content from its start to byte_end; the same content is ingested once",
        ),
        Column(
            "bytes",
            pl.Int64,
            "decompressed bytes the row covers (byte_end - byte_start; the whole file but for "
            "a grown file's later pieces)",
        ),
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
        Column(
            "status",
            pl.Utf8,
            "'ingested' (read by the parser in format) | 'skipped' (not a log, not read) | "
            "'failed' (the parser failed: every line is in unparsed, reason parser_failed:<error>)",
        ),
        Column(
            "skip_kind",
            pl.Utf8,
            "what a skipped file was taken for: markdown, json, csv, yaml, python, image, pdf, "
            "html, empty, binary, text (no log markers, and a name that does not say log), special (a FIFO, "
            "socket or device, never opened)",
        ),
        Column("skip_reason", pl.Utf8, "why it was skipped, or the error its parser failed with, in words"),
        # a log that grew since it was ingested adds a piece; never its earlier lines again
        Column(
            "piece",
            pl.Int32,
            "1 for a file as first ingested; n + 1 for the lines a grown file (same path and "
            "host, the committed bytes a prefix of it) added after piece n",
        ),
        Column("byte_start", pl.Int64, "first decompressed byte of the file the row covers (0 but for later pieces)"),
        Column("byte_end", pl.Int64, "decompressed byte after the last one the row covers: where a later piece starts"),
        Column("line_start", pl.Int64, "line_no of the row's first line (line numbers run on across pieces)"),
        Column("line_end", pl.Int64, "line_no of the row's last line"),
        Column(
            "grown",
            pl.Utf8,
            "NULL for a file read as it first came; 'appended': the lines after the committed "
            "piece before it, read on with the parser's state; 'replaced': the file re-read from the start of its "
            "committed last piece, which this row replaced (its last line was partial, a record ran across the end, "
            "or the format is read whole: compressed files, transcripts)",
        ),
        Column("replaced_sha256", pl.Utf8, "for 'replaced': sha256 of the version it replaced"),
        Column("replaced_bytes", pl.Int64, "for 'replaced': the byte_end of the version it replaced"),
        Column(
            "resume_state",
            pl.Utf8,
            "what the parser knew at byte_end (JSON: the host given, and for server logs "
            "the year, role and clock), read back when the file has grown",
        ),
        Column(
            "data_files",
            pl.List(pl.Struct({"file": pl.Utf8, "bytes": pl.Int64})),
            "the input's other Parquet files as ingest committed them (path under tables/ and size each; "
            "inputs/<key>.json lists them as they are now, after `forensics compact`; NULL in stores written before)",
        ),
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
        Column(
            "extra",
            pl.List(pl.Struct({"key": pl.Utf8, "value": pl.Utf8})),
            "every other key: value of the line, and a known key whose value no column holds (`inf`, `nan`, "
            "past BIGINT: its column is NULL) (a MAP in SQL)",
        ),
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
            "http_access | nixl_error | ucx_error | ... (`SELECT kind, count(*) FROM events GROUP BY kind` lists "
            "a store's); 'log' for other messages",
        ),
        Column("severity", pl.Utf8, "'debug' | 'info' | 'warning' | 'error' | 'fatal'"),
        Column(
            "source",
            pl.Utf8,
            "line family: sglang | uvicorn | request_log | aiohttp | glog | ucx | c10d | nccl | router | crash | py-spy",
        ),
        Column("rid", pl.Utf8, "request id on this server (prefill and decode rids of one request may differ)"),
        Column("bootstrap_room", pl.Int64, "PD bootstrap room (63-bit); the join key across servers"),
        Column(
            "reason",
            pl.Utf8,
            "normalised failure reason: aborted, waiting_timeout, bootstrap_timeout, node_failure, ...",
        ),
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
        Column(
            "reason",
            pl.Utf8,
            "why: unrecognised | truncated | invalid_json | schema:<field> | too_deep | line_too_long | "
            "parser_failed:<error> | ...",
        ),
        Column("format", pl.Utf8, "parser that gave up on it"),
    ),
)

# Parsers of other issues append their tables here (transfers, telemetry, replies, ...).
TABLES: dict[str, Table] = {t.name: t for t in (FILES, BATCHES, EVENTS, UNPARSED)}


def register(table: Table) -> Table:
    TABLES[table.name] = table
    return table


def conform(table: str, df: pl.DataFrame) -> pl.DataFrame:
    """Return `df` with exactly the table's stored columns, in order and type; missing ones are NULL."""
    t = TABLES[table]
    cols = []
    for c in t.stored:
        if c.name in df.columns:
            cols.append(pl.col(c.name).cast(c.dtype, strict=False))
        else:
            cols.append(pl.lit(None, dtype=c.dtype).alias(c.name))
    if not any(c.name in df.columns for c in t.stored):
        # a select of literals alone gives one row whatever the frame's height
        return pl.DataFrame({c.name: pl.Series(c.name, [None] * df.height, dtype=c.dtype) for c in t.stored})
    return df.select(cols)


# --- issue 3: KV transfers, telemetry -----------------------------------------------------------
TRANSFER_EVENTS = register(
    Table(
        "transfer_events",
        'One row per line of a KV transfer trace (docs/formats/TRANSFER_TRACE.md, "Tables"), in file order. The '
        "trace's `room` is `bootstrap_room` here and its file `source_file`, like every other table.",
        (
            Column("ts", TS, "UTC event time (microseconds)"),
            Column("ts_raw", pl.Utf8, "the `ts` value as written (float seconds or ISO-8601 text)"),
            Column("ts_naive", pl.Boolean, "`ts` was an ISO string without an offset, taken as UTC"),
            Column("host", pl.Utf8, "host of the emitting process (the trace's own `host` field)"),
            Column("pid", pl.Int64, "OS process id of the emitter"),
            Column("side", pl.Utf8, "'prefill' | 'decode'"),
            Column("engine_rank", pl.Int32, "the emitter's engine (TP) rank"),
            Column("dp_rank", pl.Int32, "the emitter's DP rank"),
            Column("bootstrap_room", pl.Int64, "PD bootstrap room (exact 63-bit; 0 = warmup/health)"),
            Column("rid", pl.Utf8, "sglang request id on the emitting side"),
            Column("kind", pl.Utf8, "'kv' | 'aux' | 'state' | 'index_k' (other values kept, unknown_enum)"),
            Column("chunk", pl.Int32, "chunk index within the room (kv, chunked index_k); NULL for aux/state"),
            Column("is_last", pl.Boolean, "the room's last chunk"),
            Column("event", pl.Utf8, "'post' | 'done' | 'fail' | 'notif' | 'abort' | 'checksum' (other values kept)"),
            Column("unknown_enum", pl.Boolean, "kind or event outside the spec's lists; excluded from verdicts"),
            Column("bytes", pl.Int64, "bytes in the unit, or covered by the checksum"),
            Column(
                "status",
                pl.Utf8,
                'NIXL status name (integers of old builds mapped, docs/formats/NIXL.md, "Status codes")',
            ),
            Column("status_raw", pl.Utf8, "the status as written when it was an integer"),
            Column("peer", pl.Utf8, "remote NIXL agent (decode agent on prefill rows, prefill agent on decode rows)"),
            Column("error", pl.Utf8, "error or reason text"),
            Column("checksum", pl.Utf8, "checksum normalised: lower-case hex, no 0x"),
            Column("checksum_int", pl.Utf8, "the checksum as an unsigned decimal integer (compared across sides)"),
            Column("extra", pl.Utf8, "every unknown field, as a JSON object (e.g. checksum_algo, notif, src_rank)"),
        )
        + _SOURCE_COLS,
    )
)

TELEMETRY = register(
    Table(
        "telemetry",
        'NIXL telemetry ring-buffer events (docs/formats/NIXL.md, "Telemetry ring-buffer file"; format versions 1-4), '
        "read without consuming the file.",
        (
            Column("ts", TS, "event time (format v1 only: wall clock at enqueue); NULL for v2+"),
            Column("host", pl.Utf8, "host the file came from (for clock offsets)"),
            Column("agent", pl.Utf8, "NIXL agent name: the file's name (a UUID under sglang)"),
            Column("version", pl.Int32, "telemetry format version 1-4"),
            Column("slot", pl.Int64, "ring slot the event was read from"),
            Column("seq", pl.Int64, "order of the event from read_pos (live events), or among stale v1 slots"),
            Column(
                "category",
                pl.Utf8,
                "MEMORY | TRANSFER | CONNECTION | BACKEND | ERROR | PERFORMANCE | SYSTEM | CUSTOM "
                "(v3+: derived from the event type)",
            ),
            Column(
                "event",
                pl.Utf8,
                "event name, e.g. agent_tx_bytes, agent_xfer_time, NIXL_ERR_BACKEND, agent_err_backend",
            ),
            Column("event_type", pl.Int32, "numeric event type (v2+)"),
            Column("value", pl.Int64, 'bytes, microseconds, counts (see docs/formats/NIXL.md, "Telemetry events")'),
            Column("stale", pl.Boolean, "a v1 slot outside read_pos..write_pos: already consumed, salvaged"),
            Column("buffer_full", pl.Boolean, "the ring was full when copied: later events were dropped by the writer"),
            Column(
                "dropped_events",
                pl.Int64,
                "events the agent reported dropping (sum of v4 agent_telemetry_events_dropped); NULL before v4",
            ),
        )
        + _SOURCE_COLS[:1],
    )
)


# --- agent transcripts ---------------------------------------------------------------------------
_TURN_CORE = (
    Column("source", pl.Utf8, "'opencode' | 'openai_proxy' | 'claude_code' | 'outputs_dir'"),
    Column(
        "session_id", pl.Utf8, "session (opencode ses_…, Claude Code sessionId, proxy session or file, outputs folder)"
    ),
    Column("turn_id", pl.Utf8, "the assistant message / exchange / output file; unique within (source, session_id)"),
    Column("t_start", TS, "UTC time the request went out (request line, assistant time.created, previous user line)"),
    Column("t_end", TS, "UTC time the reply was complete (response line, time.completed, assistant line, file mtime)"),
    Column("model", pl.Utf8, "model name the source records"),
    Column(
        "finish_reason", pl.Utf8, "stop | length | tool_calls | content_filter | abort | error | …, in sglang's words"
    ),
    Column("prompt_tokens", pl.Int64, "prompt tokens (opencode: input + cache.read)"),
    Column("completion_tokens", pl.Int64, "completion tokens (opencode: output + reasoning)"),
    Column("n_tool_calls", pl.Int64, "structured tool calls in the reply"),
    Column("content_chars", pl.Int64, "characters of visible content"),
    Column("reasoning_chars", pl.Int64, "characters of reasoning content"),
    Column("rid", pl.Utf8, "sglang rid when the source carries it (request rid, or a 32-hex response id)"),
    Column("bootstrap_room", pl.Int64, "PD bootstrap room when the request carried one (see error_bootstrap_room)"),
    Column("http_status", pl.Int32, "HTTP status of the response (proxy; API errors in opencode / Claude Code)"),
    # the verdict: decided by the detectors over the stored turns (forensics.analysis.verdicts)
    Column(
        "signatures",
        pl.List(pl.Utf8),
        "corruption signatures that fired, 'S1'..'S16' (docs/formats/TRANSCRIPTS.md, \"Corruption signatures S1-S16\")",
        analysis=True,
    ),
    Column(
        "corruption_class",
        pl.Utf8,
        "'clean' | 'parse_leak' | 'incoherent' | 'empty' | 'config' | 'transfer_error'",
        analysis=True,
    ),
    Column(
        "corrupted",
        pl.Boolean,
        "class is parse_leak, incoherent or empty (config and transfer_error are not corruption)",
        analysis=True,
    ),
    Column(
        "evidence",
        pl.Utf8,
        "snippet per deciding signature, the match between ⟦ ⟧, control characters escaped",
        analysis=True,
    ),
)
_TURN_EXTRA = (
    Column(
        "degraded_markup",
        pl.Boolean,
        "markup that fired was an ASCII / spaced look-alike of DSML or a special token",
        analysis=True,
    ),
    Column("seq", pl.Int64, "0-based position of the turn in its session, by time"),
    Column("parent_id", pl.Utf8, "the user message or request the turn answers"),
    Column("error_text", pl.Utf8, "error body or message recorded for the turn"),
    Column("error_rid", pl.Utf8, "rid the error body names (`req.rid='…'`, `rid=…`): the failing request's rid"),
    Column(
        "error_bootstrap_room",
        pl.Int64,
        "bootstrap room the error body names (`KVTransferError(bootstrap_room=N)`, `bootstrap_room: N`)",
    ),
    Column("reasoning_tokens", pl.Int64, "reasoning tokens, where reported"),
    Column("cached_tokens", pl.Int64, "prefix-cache tokens, where reported"),
    Column("response_id", pl.Utf8, "upstream response id (chatcmpl-…, msg_…, a rid)"),
    Column("truncated", pl.Boolean, "the reply is cut short in the record (a stream without [DONE])"),
    Column("source_file", pl.Utf8, "input file or folder"),
    Column("line_no", pl.Int64, "line of the reply (JSONL), else its ordinal in the file"),
)

TURNS = register(
    Table(
        "turns",
        "One row per assistant turn of an agent transcript, as parsed: the canonical turn record "
        '(docs/formats/TRANSCRIPTS.md, "The canonical turn") with its text and corruption verdict. '
        "Read `replies` for the linked view.",
        _TURN_CORE
        + _TURN_EXTRA
        + (
            Column("content", pl.Utf8, "visible reply text"),
            Column("reasoning", pl.Utf8, "reasoning text"),
            Column("tool_calls", pl.Utf8, "structured tool calls, JSON [{id, name, arguments}]"),
            Column("offered_tools", pl.Utf8, "names of the tools the request offered, JSON, when known"),
        ),
        # what the detectors read besides the public columns, so a new detector version needs no re-ingest
        stored_only=(
            Column(
                "offered_tool_params",
                pl.Utf8,
                "the tools the request offered with their required parameters, JSON [{name, required}], when known",
            ),
            Column("tools_offered", pl.Boolean, "the agent offers tools, even when the transcript does not list them"),
            Column("user_text", pl.Utf8, "text of the user turn the reply answers"),
        ),
    )
)
# The verdict columns are decided per session of one input: within an input these name one turn.
VERDICT_KEY = ("source", "session_id", "seq")

# --- derived at ingest: what the wedge view needs of one input (forensics/ingest/derive.py) -------
# (their "none" rows say the input was summarised and had nothing to keep of that host)
WEDGE_STREAMS = register(
    Table(
        "wedge_streams",
        "What `wedge_intervals` needs of one input's progress, computed when the input is ingested "
        '(forensics/ingest/derive.py; ARCHITECTURE.md, "Derived at ingest"): per stream of one host '
        "(`rank`: one (DP, TP) rank's stats lines; `stats`: every stats line of the host; `lines`: every "
        "timed line of the host) and per unit (an input, or a piece of a grown file) its first and last "
        "second, its stops of at least 5 s, and the intervals between its seconds while it had work, "
        "counted. Times are the log's own (before clock offsets).",
        (
            Column("host", pl.Utf8, "host of the input"),
            Column("unit", pl.Utf8, "the unit the row summarises: the input's sha256 (first 20) and piece"),
            Column("stream", pl.Utf8, "'rank' | 'stats' | 'lines'"),
            Column("dk", pl.Int32, "DP rank of a `rank` stream, -1 without one (and for the other streams)"),
            Column("tk", pl.Int32, "TP rank of a `rank` stream, -1 without one (and for the other streams)"),
            Column(
                "what",
                pl.Utf8,
                "'first' | 'last' (the unit's first or last second of the stream: t_a its first line, t_b its "
                "last, t_c the first line of the next second, busy) | 'gap' (a stop: t_a the last line before "
                "it, t_b the first after, busy of the second before) | 'hist' (us, n: n intervals of us "
                "microseconds from a busy second to the next, but the one after the unit's first second) | 'peer' (a "
                "second of a rank inside another rank's stop: t_a its first line, t_b its last, busy) | 'none' (the "
                "host's lines in the unit have no time)",
            ),
            Column("t_a", TS, "see what"),
            Column("t_b", TS, "see what"),
            Column("t_c", TS, "see what"),
            Column("busy", pl.Boolean, "the second's stats lines showed work in flight"),
            Column("us", pl.Int64, "interval in microseconds (hist)"),
            Column("n", pl.Int64, "intervals of that length (hist)"),
            Column(
                "load",
                pl.Int64,
                "requests in flight on the last stats line of the second before a rank's stop (gap) or of its last "
                "second (last): running, queued, in transfer, in prealloc, bootstrapping, retracted",
            ),
        ),
    )
)
WEDGE_SIGNALS = register(
    Table(
        "wedge_signals",
        "The lines `wedge_intervals` reads as a wedge's signals, kept when the input is ingested "
        "(forensics/ingest/derive.py): health checks, the watchdog, collective and request timeouts, arrivals, "
        "crashes, shutdowns, restarts, where a wedge can be (inside a stop of the stats lines, before the input's "
        "first one or after its last), and every thread that died.",
        (
            Column("host", pl.Utf8, "host of the input"),
            Column("unit", pl.Utf8, "the input's sha256 (first 20) and piece"),
            Column("dk", pl.Int32, "DP rank of the line, -1 without one"),
            Column("tk", pl.Int32, "TP rank of the line (for a death, the engine_rank it names), -1 without one"),
            Column("ts", TS, "time of the line (NULL on a 'none' row)"),
            Column(
                "sig",
                pl.Utf8,
                "'health_check_failed' | '/health 503' | '/health 200' | 'watchdog' | 'collective_timeout' | "
                "'arrival' | 'crash' | 'shutdown' | 'restart' | 'dead thread' | a timeout's reason | 'death' (a "
                "thread died) | 'none' (the host has no such line in the input)",
            ),
            Column("bootstrap_room", pl.Int64, "bootstrap room the line names"),
        ),
    )
)
