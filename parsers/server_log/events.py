"""Event lines into `events` rows: kind, severity, source, reason, and the identifiers and request
fields each line carries. docs/formats/SGLANG.md: "Classification order",
"Identifiers: rid and bootstrap room"."""

from __future__ import annotations

import polars as pl

from forensics.parsers.base import Context
from forensics.parsers.server_log.classify import (
    FEW_ROWS,
    _alt,
    _first_kind,
    _kind_expr,
    _local_to_utc,
    _uvicorn_level,
)
from forensics.parsers.server_log.grammar import (
    ENGINE_FAMILIES,
    ENGINE_KIND_RULES,
    ENGINE_RID_PATTERNS,
    FAILURE_KINDS,
    GLOG_FILE_MOONCAKE,
    GLOG_FILE_NIXL,
    JSON_TS_LEAD,
    KIND_RULES,
    PEER_PATTERNS,
    PRE_PEER,
    PRE_REQ,
    PRE_RID,
    PRE_ROOM,
    RANK_LITERAL,
    RE_ACCESS,
    RE_AIOHTTP_ACCESS,
    RE_CLF_ACCESS_LINE,
    RE_COLLECTIVE_TIMEOUT,
    RE_EXCEPTION_REASON,
    RE_JSON_TS,
    RE_KVT_ERROR,
    RE_NIXL_BINDING,
    RE_RANK,
    RE_ROUTER_FAILURE,
    RE_ROUTER_HEALTH,
    RE_SPAN_RID,
    RE_TB_KVT_REASON,
    RE_TB_KVT_ROOM,
    RE_TRANSPORT_WARNING,
    RE_UVICORN_ACCESS_LINE,
    REASON_RULES,
    REQUEST_FIELDS,
    RID_PATTERNS,
    ROOM_PATTERNS,
    ROUTER_PEER_PATTERNS,
    ROUTER_STATUS,
    SEVERITY_BY_KIND,
    SPAN_RID_LITERAL,
    TB_KVT_ROOM_LITERAL,
    WARNING_KINDS,
)


def _on_rows(df: pl.DataFrame, mask: pl.Series | pl.Expr, fn, schema: dict) -> pl.DataFrame:
    """Add the columns `fn(sub)` computes (`schema`) on the rows of `df` where `mask` holds; null elsewhere.

    A regex in `when(..).then(..)` still runs on every row: running it on the few rows that can
    match (a kind, or a literal every pattern of the family needs) gives the same columns. With
    no such row `fn` is not run at all: polars compiles a regex even for no rows, and keeps only
    a few compiled.
    """
    if isinstance(mask, pl.Expr):
        mask = df.select(mask.fill_null(False)).to_series()
    if not mask.any():
        return df.with_columns(pl.lit(None, dtype=t).alias(c) for c, t in schema.items())
    if df.height <= FEW_ROWS:
        # `fn` is row by row: on every row, masked, in fewer calls than filter and scatter
        return df.with_columns(pl.when(mask).then(c).alias(c.name) for c in fn(df).get_columns())
    sub = fn(df.filter(mask))
    if sub.height == df.height:
        return df.with_columns(sub)
    idx = mask.arg_true()
    return df.with_columns(
        [pl.Series(c.name, dtype=c.dtype).extend_constant(None, df.height).scatter(idx, c) for c in sub.get_columns()]
    )


_REGEX_THREADS: dict[tuple[str, str], object] = {}


def _regex_thread(family: str, fn, *args):
    """`fn(*args)` on the thread kept for one family of regexes and the calling parse thread,
    the caller waiting.

    Polars compiles a regex on the thread that runs it (with one pool thread, the calling one)
    and keeps the last 32 per thread. A pass runs some hundred patterns, so on one thread each was
    compiled again every pass. Each family (KIND_RULES, REASON_RULES,
    the rid and room patterns, the line families) on a thread of its own stays compiled; one
    such thread per parse thread (by name: each file's parse pool names them alike), so the
    parse threads do not wait on each other. `fn` must not wait on its own family's thread.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    key = (family, threading.current_thread().name)
    pool = _REGEX_THREADS.get(key)
    if pool is None:  # a race only makes a pool that never starts a thread
        pool = _REGEX_THREADS.setdefault(key, ThreadPoolExecutor(1, thread_name_prefix=f"regex-{family}"))
    return pool.submit(fn, *args).result()


# Polars keeps the last 32 regexes it compiled on a thread: a family of more rules than that, run on
# one thread, compiled every one of them again on every call (KIND_RULES and REASON_RULES hold 35)
RULES_PER_THREAD = 24


def _first_kind_threads(family: str, text: pl.Series, rules: list[tuple[str, str]], default=None) -> pl.Series:
    """`_first_kind(text, rules, default)` with each RULES_PER_THREAD of the rules on a regex thread of
    their own, the later ones on the rows no earlier one took."""
    chunks = [rules[i : i + RULES_PER_THREAD] for i in range(0, len(rules), RULES_PER_THREAD)]
    out = _regex_thread(family, _first_kind, text, chunks[0])
    for j, chunk in enumerate(chunks[1:], 1):
        idx = out.is_null().arg_true()
        if not idx.len():
            break
        out = out.scatter(idx, _regex_thread(f"{family}-{j}", _first_kind, text.gather(idx), chunk))
    return out if default is None else out.fill_null(default)


def _first_capture(d: pl.DataFrame, patterns: list[str]) -> pl.Series:
    """`_alt(patterns)` on `d`, each later pattern run only on the rows still without a capture
    (on a few rows `_alt` itself, one call)."""
    if d.height <= FEW_ROWS:
        return d.select(_alt(patterns)).to_series()
    m = d["message"]
    res = m.str.extract(patterns[0], 1)
    for p in patterns[1:]:
        miss = res.is_null()
        if not miss.any():
            break
        res = res.scatter(miss.arg_true(), m.filter(miss).str.extract(p, 1))
    return res


def _events(ev: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    return _event_rooms(_event_fields(ev, ctx))


# `_event_fields` of no rows, per input schema and zone: its polars calls cost as much on no rows as
# on many, and a small input (one member of an archive of thousands) often has no such line
_NO_EVENTS: dict[tuple[str, str], pl.DataFrame] = {}


def _event_fields(ev: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Kind, severity, source and the fields each event line carries on its own."""
    if ev.height:
        return _event_fields_of(ev, ctx)
    key = (str(ev.schema), ctx.tz)
    if key not in _NO_EVENTS:
        _NO_EVENTS[key] = _event_fields_of(ev, ctx)
    return _NO_EVENTS[key].clone()


_REQUEST_DTYPES = {"str": pl.Utf8, "int": pl.Int64, "float": pl.Float64}


def _request_field(pattern: str, dtype: str) -> pl.Expr:
    """A REQUEST_FIELDS capture, cast: one that is no number (`[0-9.]+` reads `1.2.`) is null, not an error."""
    x = pl.col("message").str.extract(pattern, 1)
    return x if dtype == "str" else x.cast(_REQUEST_DTYPES[dtype], strict=False)


def _event_fields_of(ev: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    msg = pl.col("message")
    fam = pl.col("family")
    is_access = msg.str.contains(RE_UVICORN_ACCESS_LINE) | msg.str.contains(RE_CLF_ACCESS_LINE)
    lvl_uv = _uvicorn_level(msg)
    glog_nixl = pl.col("glog_file").str.contains(GLOG_FILE_NIXL)
    glog_mc = pl.col("glog_file").str.contains(GLOG_FILE_MOONCAKE)
    is_err_level = pl.col("level").is_in(["E", "F", "ERROR", "FATAL", "CRITICAL"])
    timeout_txt = msg.str.contains(RE_COLLECTIVE_TIMEOUT)
    # every branch before the sglang message rules gives a kind; those rules run on the rest only
    kind0 = (
        pl.when((fam == "aiohttp") | (fam.is_in(["sglang", "bare"]) & msg.str.contains(RE_AIOHTTP_ACCESS)))
        .then(pl.lit("bootstrap_access"))
        .when(fam == "uvicorn")
        .then(pl.when(is_access).then(pl.lit("http_access")).otherwise(pl.lit("http_log")))
        .when(fam.is_in(["sglang", "bare"]) & is_access)
        .then(pl.lit("http_access"))
        .when(fam.is_in(["sglang", "bare"]) & pl.col("_lvl_uv").is_not_null())
        .then(pl.lit("http_log"))
        .when(fam == "glog")
        .then(
            pl.when(~is_err_level & msg.str.contains(RE_TRANSPORT_WARNING))
            .then(pl.lit("transport_warning"))
            .when(glog_nixl)
            .then(pl.when(is_err_level).then(pl.lit("nixl_error")).otherwise(pl.lit("nixl_log")))
            .when(glog_mc)
            .then(pl.when(is_err_level).then(pl.lit("mooncake_error")).otherwise(pl.lit("mooncake_log")))
            .otherwise(pl.when(is_err_level).then(pl.lit("glog_error")).otherwise(pl.lit("glog")))
        )
        .when(fam == "ucx")
        .then(
            pl.when(pl.col("level").is_in(["ERROR", "FATAL"]))
            .then(pl.lit("ucx_error"))
            .when(pl.col("level") == "WARN")
            .then(pl.lit("ucx_warning"))
            .otherwise(pl.lit("ucx_log"))
        )
        .when(fam == "router")
        .then(
            pl.when(pl.col("level").is_in(["ERROR", "WARN"]) & msg.str.contains(RE_ROUTER_FAILURE))
            .then(pl.lit("router_failure"))
            .when(pl.col("level").is_in(["ERROR", "WARN"]) & msg.str.contains(RE_ROUTER_HEALTH))
            .then(pl.lit("health_check_failed"))
            .when(pl.col("level") == "ERROR")
            .then(pl.lit("router_error"))
            .when(pl.col("level") == "WARN")
            .then(pl.lit("router_warning"))
            .otherwise(pl.lit("router_log"))
        )
        # another engine's line: its P/D failure templates, else its level (vllm_error, trtllm_warning, ...)
        .when(fam.is_in(ENGINE_FAMILIES))
        .then(
            pl.coalesce(
                pl.col("_ek"),
                pl.concat_str(
                    fam,
                    pl.when(is_err_level | (pl.col("level") == "F"))
                    .then(pl.lit("_error"))
                    .when(pl.col("level").is_in(["W", "WARN", "WARNING"]))
                    .then(pl.lit("_warning"))
                    .otherwise(pl.lit("_log")),
                ),
            )
        )
        .when(fam.is_in(["c10d", "nccl"]))
        .then(pl.when(timeout_txt).then(pl.lit("collective_timeout")).otherwise(pl.concat_str(fam, pl.lit("_log"))))
        .when(fam == "python")
        .then(pl.lit("exception"))
        .when(msg.str.contains(RE_NIXL_BINDING))
        .then(pl.lit("nixl_log"))
    )
    # the engines' failure templates, on their lines alone: a when-chain would run them on every line
    ev = _on_rows(
        ev,
        fam.is_in(ENGINE_FAMILIES),
        lambda d: d.select(_ek=_kind_expr(ENGINE_KIND_RULES, "message")),
        {"_ek": pl.Utf8},
    )
    ev = ev.with_columns(_lvl_uv=lvl_uv).with_columns(_k0=kind0).drop("_ek")
    ev = _on_rows(
        ev,
        pl.col("_k0").is_null(),
        lambda d: _first_kind_threads("kinds", d["message"], KIND_RULES, "log").alias("_sgk").to_frame(),
        {"_sgk": pl.Utf8},
    )
    level_sev = (
        pl.when(pl.col("level").is_in(["E", "ERROR", "CRITICAL"]))
        .then(pl.lit("error"))
        .when(pl.col("level").is_in(["F", "FATAL"]))
        .then(pl.lit("fatal"))
        .when(pl.col("level").is_in(["W", "WARN", "WARNING"]))
        .then(pl.lit("warning"))
        .when(pl.col("level").is_in(["I", "INFO"]))
        .then(pl.lit("info"))
        .when(pl.col("level").is_in(["DEBUG", "TRACE", "DIAG", "D", "V"]))
        .then(pl.lit("debug"))
    )
    uv_sev = pl.col("_lvl_uv").str.to_lowercase().replace({"critical": "fatal", "trace": "debug"})
    ev = ev.with_columns(kind=pl.coalesce("_k0", "_sgk"), _uv_sev=uv_sev, _lvl_sev=level_sev).drop(
        "_lvl_uv", "_k0", "_sgk"
    )
    ev = ev.with_columns(
        severity=pl.coalesce(
            pl.col("_lvl_sev"), pl.col("_uv_sev"), pl.col("kind").replace_strict(SEVERITY_BY_KIND, default="info")
        ),
        source=pl.when(fam == "bare")
        .then(pl.lit("sglang"))
        .when(fam == "sglang")
        .then(
            pl.when(pl.col("kind").is_in(["request_received", "request_finished"]))
            .then(pl.lit("request_log"))
            .when(pl.col("kind").is_in(["http_access", "http_log"]))
            .then(pl.lit("uvicorn"))
            .when(pl.col("kind") == "bootstrap_access")
            .then(pl.lit("aiohttp"))
            .otherwise(pl.lit("sglang"))
        )
        .when((fam == "crash") & (pl.col("kind") == "hang_dump"))
        .then(pl.lit("py-spy"))
        .otherwise(fam),
    )

    def reason(d: pl.DataFrame) -> pl.DataFrame:
        kvt = msg.str.extract(RE_KVT_ERROR, 1)
        # a record's KVTransferError in its traceback says why, where its head does not
        tb_kvt = (
            pl.col("traceback").str.extract(RE_TB_KVT_REASON, 1)
            if "traceback" in d.columns
            else pl.lit(None, dtype=pl.Utf8)
        )
        d = d.with_columns(_reason_src=pl.coalesce(kvt, msg.str.extract(RE_EXCEPTION_REASON, 1), tb_kvt, msg))
        return d.select(
            reason=pl.coalesce(
                pl.lit(_first_kind_threads("reason-rules", d["_reason_src"], REASON_RULES)),
                pl.when(pl.col("kind") == "abort").then(pl.lit("aborted")),
                pl.lit("other"),
            )
        )

    def room(d: pl.DataFrame) -> pl.DataFrame:
        r = pl.lit(_regex_thread("ids", _first_capture, d, ROOM_PATTERNS)).cast(pl.UInt64, strict=False)
        return d.select(bootstrap_room=pl.when(r < (1 << 63)).then(r).cast(pl.Int64))

    def access(d: pl.DataFrame) -> pl.DataFrame:
        a = d["message"].str.extract_groups(RE_ACCESS).struct.unnest()
        return a.select(_acc_status="4", http_method="2", http_path="3", _acc_peer="1")

    def request(d: pl.DataFrame) -> pl.DataFrame:
        return d.select(_request_field(p, t).alias(c) for c, p, t in REQUEST_FIELDS)

    def json_ts(d: pl.DataFrame) -> pl.DataFrame:
        t = msg.str.extract(RE_JSON_TS, 1).str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us")
        return d.select(_jts=pl.when(pl.col("outer_ts").is_null()).then(_local_to_utc(t, ctx.tz)))

    utf8, i64 = pl.Utf8, pl.Int64
    ev = _on_rows(
        ev,
        pl.col("kind").is_in(list(FAILURE_KINDS) + list(WARNING_KINDS)),
        lambda d: _regex_thread("reasons", reason, d),
        {"reason": utf8},
    )
    ev = _on_rows(
        ev,
        msg.str.contains(PRE_RID),
        lambda d: d.select(rid=_regex_thread("ids", _first_capture, d, RID_PATTERNS)),
        {"rid": utf8},
    )
    # a router line's request is its span's `request_id` (Debug-quoted): the router's own id, which
    # is the servers' rid only when the client sent one (docs/formats/OTHER_ENGINES.md, "sgl-router")
    ev = _on_rows(
        ev,
        (fam == "router") & pl.col("span").str.contains(SPAN_RID_LITERAL, literal=True),
        lambda d: d.select(_span_rid=pl.col("span").str.extract(RE_SPAN_RID, 1)),
        {"_span_rid": utf8},
    )
    # another engine's failure names its request in its own words (`for request cmpl-…`), not SGLang's
    ev = _on_rows(
        ev,
        fam.is_in(ENGINE_FAMILIES) & pl.col("kind").is_in(list(FAILURE_KINDS) + list(WARNING_KINDS)),
        lambda d: d.select(_eng_rid=_first_capture(d, ENGINE_RID_PATTERNS)),
        {"_eng_rid": utf8},
    )
    ev = ev.with_columns(rid=pl.coalesce("_eng_rid", "rid", "_span_rid")).drop("_span_rid", "_eng_rid")
    ev = _on_rows(ev, msg.str.contains(PRE_ROOM), room, {"bootstrap_room": i64})
    if "traceback" in ev.columns:
        # a record whose head names no room (`Scheduler hit an exception: Traceback ...`) ends in the
        # KVTransferError that does: `...KVTransferError: KVTransferError(bootstrap_room=N): <reason>`
        kvt_room = pl.col("traceback").str.extract(RE_TB_KVT_ROOM, 1)
        ev = _on_rows(
            ev,
            pl.col("bootstrap_room").is_null()
            & pl.col("kind").is_in(list(FAILURE_KINDS))
            & pl.col("traceback").str.contains(TB_KVT_ROOM_LITERAL, literal=True),
            lambda d: d.select(_tb_room=kvt_room.cast(pl.UInt64, strict=False)),
            {"_tb_room": pl.UInt64},
        )
        ev = ev.with_columns(
            bootstrap_room=pl.coalesce(
                "bootstrap_room", pl.when(pl.col("_tb_room") < (1 << 63)).then(pl.col("_tb_room")).cast(pl.Int64)
            )
        ).drop("_tb_room")
    ev = _on_rows(
        ev,
        msg.str.contains(PRE_REQ),
        lambda d: _regex_thread("ids", request, d),
        {c: _REQUEST_DTYPES[t] for c, _, t in REQUEST_FIELDS},
    )
    ev = _on_rows(
        ev,
        pl.col("kind").is_in(["http_access", "bootstrap_access"]),
        access,
        {"_acc_status": utf8, "http_method": utf8, "http_path": utf8, "_acc_peer": utf8},
    )
    ev = _on_rows(
        ev,
        msg.str.contains(PRE_PEER),
        lambda d: d.select(_peer=pl.coalesce(msg.str.extract(p, 1) for p in PEER_PATTERNS)),
        {"_peer": utf8},
    )
    # the router names the server that answered and its status: `decode_url=http://h:p status=500`
    ev = _on_rows(
        ev,
        fam == "router",
        lambda d: d.select(
            _rt_status=pl.coalesce(pl.col(c).str.extract(p, 1) for c, p in ROUTER_STATUS),
            _rt_peer=pl.coalesce(msg.str.extract(p, 1) for p in ROUTER_PEER_PATTERNS),
        ),
        {"_rt_status": utf8, "_rt_peer": utf8},
    )
    ev = _on_rows(ev, msg.str.starts_with(JSON_TS_LEAD), json_ts, {"_jts": pl.Datetime("us", "UTC")})
    # the literal as the mask (no regex to compile when no line has it); `\brank=` then leaves out
    # the `dp_rank=None` and friends of request logs
    ev = _on_rows(
        ev,
        pl.col("tp_rank").is_null() & msg.str.contains(RANK_LITERAL, literal=True),
        lambda d: d.select(_rank=msg.str.extract(RE_RANK, 1).cast(pl.Int32, strict=False)),
        {"_rank": pl.Int32},
    )
    ev = ev.with_columns(
        http_status=pl.coalesce("_acc_status", "_status", "_rt_status").cast(pl.Int32, strict=False),
        peer=pl.coalesce("_acc_peer", "_peer", "_rt_peer", "peer_host"),
        # request logs in JSON carry a µs local timestamp: better than the prefix second
        ts=pl.coalesce("_jts", "ts"),
        tp_rank=pl.coalesce(pl.col("tp_rank"), pl.col("_rank"), pl.col("c10_rank")),
    ).drop("_acc_status", "_status", "_acc_peer", "_peer", "_jts", "_rank", "_rt_status", "_rt_peer")
    # a 5xx answer is the server failing a request it does not name (uvicorn logs no rid): an error,
    # whatever level the access logger gave it
    five = pl.col("kind").is_in(["http_access", "bootstrap_access"]) & (pl.col("http_status") >= 500)
    ev = ev.with_columns(
        severity=pl.when(five).then(pl.lit("error")).otherwise(pl.col("severity")),
        reason=pl.when(five).then(pl.lit("server_error")).otherwise(pl.col("reason")),
    )
    return ev


def _event_rooms(ev: pl.DataFrame) -> pl.DataFrame:
    """Rooms one event line gives another: they need all events of the block, in line order
    (of each block, `_blk`, when there are several). Each step runs only on the rows it can
    change: most blocks have a few failure lines and no line missing the room of its rid."""
    blk = ["_blk"] if "_blk" in ev.columns else []
    # A worker error names the room, the failure line right after it often only the rid
    # (llm-d#2433): carry the room to the next failure line of the same worker burst.
    fail = ev.select(pl.col("kind").is_in(["transfer_failed", "bootstrap_failed"]).fill_null(False)).to_series()
    if fail.any():
        ffill = (lambda e: e.forward_fill().over(blk)) if blk else (lambda e: e.forward_fill())
        lent = (
            ev.filter(fail)
            .with_columns(
                _fr=ffill(pl.when(pl.col("rid").is_null()).then(pl.col("bootstrap_room"))),
                _fl=ffill(
                    pl.when(pl.col("rid").is_null() & pl.col("bootstrap_room").is_not_null()).then(pl.col("line_no"))
                ),
                # only a line naming a request takes one: a line naming neither (a bootstrap server that
                # did not answer) is about no room in particular
            )
            .select(
                pl.when(
                    pl.col("bootstrap_room").is_null()
                    & pl.col("rid").is_not_null()
                    & (pl.col("line_no") - pl.col("_fl") <= 50)
                )
                .then(pl.col("_fr"))
                .otherwise(pl.col("bootstrap_room"))
            )
            .to_series()
        )
        ev = ev.with_columns(ev["bootstrap_room"].scatter(fail.arg_true(), lent))
    # a line cut before its room still names its rid: take the room the same rid has elsewhere
    if not ev.select((pl.col("rid").is_not_null() & pl.col("bootstrap_room").is_null()).any()).item():
        return ev
    return ev.with_columns(
        bootstrap_room=pl.coalesce(
            pl.col("bootstrap_room"),
            pl.when(pl.col("rid").is_not_null()).then(
                pl.col("bootstrap_room").drop_nulls().first().over([*blk, "rid"])
            ),
        )
    )


_ACCESS_COLUMNS = ["_acc_peer", "_acc_method", "_acc_path", "_acc_status"]
_REQUEST_COLUMNS = [
    "_req_kind",
    "_req_rid",
    "_req_finish",
    "_req_status",
    "_req_room",
    "_req_prompt",
    "_req_completion",
    "_req_cached",
    "_req_e2e",
    "_req_rank",
]
_NATIVE_EVENT_COLUMNS = _ACCESS_COLUMNS + _REQUEST_COLUMNS


def _ready_rows(ev: pl.DataFrame) -> pl.DataFrame:
    """What `_event_fields` gives the lines the native scanner read whole, in one pass.

    A canonical uvicorn access line (`INFO:     peer - "METHOD path proto" status`, `_acc_*`)
    has no rid, room, request field or rank in it; a request log line (`Receive: ...`,
    `Finish: ...`, `_req_*`) is ASCII, with its room as `bootstrap_room=N` and no peer address.
    """
    acc = pl.col("_acc_status").is_not_null()
    # a 5xx answer is the server failing a request it does not name (uvicorn logs no rid): an error
    five = acc & (pl.col("_acc_status").cast(pl.Int32, strict=False) >= 500)
    return ev.with_columns(
        kind=pl.when(acc)
        .then(pl.lit("http_access"))
        .when(pl.col("_req_kind") == 1)
        .then(pl.lit("request_received"))
        .otherwise(pl.lit("request_finished")),
        severity=pl.when(five).then(pl.lit("error")).otherwise(pl.lit("info")),
        reason=pl.when(five).then(pl.lit("server_error")),
        source=pl.when(acc).then(pl.lit("uvicorn")).otherwise(pl.lit("request_log")),
        http_status=pl.coalesce("_acc_status", "_req_status").cast(pl.Int32),
        http_method=pl.col("_acc_method"),
        http_path=pl.col("_acc_path"),
        peer=pl.when(acc).then(pl.col("_acc_peer")).otherwise(pl.col("peer_host")),
        rid=pl.col("_req_rid"),
        bootstrap_room=pl.col("_req_room"),
        finish_reason=pl.col("_req_finish"),
        prompt_tokens=pl.col("_req_prompt"),
        completion_tokens=pl.col("_req_completion"),
        cached_tokens=pl.col("_req_cached"),
        e2e_latency=pl.col("_req_e2e"),
        tp_rank=pl.when(acc)
        .then(pl.col("tp_rank"))
        .otherwise(pl.coalesce(pl.col("tp_rank"), pl.col("_req_rank").cast(pl.Int32), pl.col("c10_rank"))),
    ).drop(_NATIVE_EVENT_COLUMNS)
