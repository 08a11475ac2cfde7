"""SGLang server logs of every era (2024-2026), with everything that interleaves in them.

One file of a PD server mixes sglang scheduler lines, uvicorn lines, request logs (text and JSON),
NIXL / Mooncake abseil-glog lines, UCX lines, torch c10d and NCCL lines, and Python tracebacks,
often wrapped by a log shipper (k8s CRI, docker, Kibana, a tqdm bar glued in front). Each line is
recognised on its own (../shared/formats/SGLANG.md §14 classification order):

  outer wrapper -> sglang prefix -> uvicorn -> abseil/glog -> UCX -> c10d -> NCCL -> bare known
  message -> traceback continuation -> unparsed

All of it is vectorised over blocks of lines with polars; the only Python loops are per block or
over the (rare) k8s partial records.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

import polars as pl

from forensics.core import schema
from forensics.core.schema import RANKS
from forensics.parsers import lines, native
from forensics.parsers.base import Batch, Context, Sample, Source
from forensics.parsers.lines import MAX_LINE_CHARS, RawBlock, read_upto

name = "server_log"
HEAD_BYTES = 4 << 20  # read up front for the year and the role
description = "SGLang server log (prefill / decode / unified), with uvicorn, NIXL, UCX, NCCL lines and tracebacks"

# --- outer wrappers (§3) -----------------------------------------------------------------------
RE_CRI = r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})) (?:stdout|stderr) ([FP]) ?(.*)$"
RE_DOCKER_T = r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})) (.*)$"
RE_KIBANA = r"^([A-Z][a-z]{2} [0-9]{1,2}, [0-9]{4} @ [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?)[\t ]+(.*)$"
# tqdm bars, a stray backtick, anything glued in front of a sglang prefix
RE_GLUED = r"^([^\[].*?)(\[(?:[0-9]{4}-)?[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?(?: [A-Za-z_]+[0-9]+)*\].*)$"

# --- line families -------------------------------------------------------------------------------
RE_SGLANG = (
    r"^\[([0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{3}))?"
    r"((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)[0-9]+)*)(?: (?:encode_server|encode_dp_worker\[[0-9]+\]))?\] ?(.*)$"
)
# SGLANG_LOGGING_CONFIG_PATH style: [date time][file.py:line][LEVEL]: message
RE_SGLANG_CUSTOM = r"^\[([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,]([0-9]{3}))?\]\[[^\]]*\]\[([A-Z]+)\]:? ?(.*)$"
RE_UVICORN_LEVEL = r"^(INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s+(.*)$"
RE_GLOG = r"^([IWEF])([0-9]{2})([0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+) +([0-9]+) ([^ :\]]+):([0-9]+)\] ?(.*)$"
RE_UCX = r"^\[([0-9]{9,11}\.[0-9]+)\] +\[([^:\]]+):([0-9]+) *:([0-9]+)\] +([\w.]+):([0-9]+) +UCX +([A-Z]+) *(.*)$"
RE_C10D = r"^\[rank([0-9]+)\]:\[([IWEF])([0-9]{1,2})([0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2})\.([0-9]+) ([^:\]]+):([0-9]+)\] ?(.*)$"
RE_NCCL = r"^([\w.-]+):([0-9]+):([0-9]+) \[([0-9]+)\] NCCL (WARN|INFO|ERROR|TRACE|ABORT) ?(.*)$"
RE_STATS = r"^(Prefill|Decode) batch(?: \[([0-9]+)\])?[.,] ?(.*)$"

# Python traceback bodies; an `ExcType: msg` line counts only right after an indented line.
TB_HEADER = r"Traceback \(most recent call last\)"
TB_CHAIN = r"During handling of the above exception|The above exception was the direct cause"
RE_TB = rf"^(?:\s+\S|{TB_HEADER}:|{TB_CHAIN}|\s*\^+\s*$)"
RE_TB_CHAIN = rf"^(?:{TB_CHAIN})"
EXC_TYPE = r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|Timeout)"
RE_EXC_LINE = rf"^({EXC_TYPE}?)(?::\s.*)?$"
# The lines a block must not start with (parsers/lines.py): an indented line, a traceback header or
# chain line, a blank line (one stands around a chain line, and the line after it may be cut
# short by the read), an `ExcType: msg` line; conservative where RE_TB needs the line above.
CONTINUES = re.compile(rf"[ \t]|{TB_HEADER}|{TB_CHAIN}|\r?\n|{EXC_TYPE}(?::|\r?\n)".encode())

# --- event kinds of sglang messages, first match wins (SGLANG.md §6-§12) ------------------------
KIND_RULES: list[tuple[str, str]] = [
    ("request_received", r'^Receive(?: OpenAI)?: |"event": ?"request\.received'),
    ("request_finished", r'^Finish: |"event": ?"request\.finished'),
    ("corruption_detected", r"Context corruption detected|Metadata unexpectedly not ready|Metadata corruption detected"),
    ("checksum_mismatch", r"[Cc]hecksum mismatch"),
    ("bootstrap_failed",
     r"Prefill bootstrap failed|Decode handshake failed|Could not fetch (?:prefill parallel|bootstrap) info"
     r"|Failed to get prefill server info|Error fetching prefill server info|bootstrap_thread died"
     r"|Lost connection with prefill instance|failed to register to bootstrap|register attempt [0-9]+/[0-9]+ failed"
     r"|Failed to query dp_ranks|Failed to register prefill dp_rank"),
    ("transfer_failed",
     r"Prefill transfer failed|Decode transfer failed|Unexpected transfer worker error|NIXL transfer encountered ERR"
     r"|NIXL transport error|NIXL staging transfer failed|KVSender failed to post|Failed to send (?:kv chunk|state components|aux data)"
     r"|failed due to node failure|KVSender transfer encountered an error|Failed to read NIXL transfer state"
     r"|left a handle running|NIXL bulk transfer failed|Failed to post prepared state transfer|Missing aux index"
     r"|^Session \S+ failed\.|Failed to transfer data from|AUX_DATA length mismatch"
     r"|KVSender failed to create|NIXL transfers could not be retired"),
    ("abort",
     r"^Abort |Aborted by |Abort request for rid|Abort in waiting queue|abort notification for room|ABORT_ACK"
     r"|Request (?:waiting|running) timeout reached|Failed to notify KV sender of abort|Malformed ABORT"),
    # NIXL peers (NIXL.md §10.5, §9.6): disconnect / reconnect with SGLANG_DISAGGREGATION_NIXL_ENABLE_RECONNECT
    ("peer_disconnect",
     r"NIXL peer \S+ disconnected|NIXL invalidated remote agent|remote agent '[^']*' was (?:disconnected|invalidated)"),
    ("peer_reconnect", r"Reconnected NIXL peer"),
    ("peer_register", r"Register KVArgs from \S+ successfully|Peer \S+ was already registered"),
    # nixl._bindings / nixl_cu12._bindings / nixl_cu13._bindings exceptions (NIXL.md §6)
    ("nixl_error", r"_bindings\.nixl\w+Error|\bnixl[A-Z]\w*Error: NIXL_"),
    ("watchdog_timeout", r"[Ww]atchdog timeout"),
    ("health_check_failed", r"Health check failed"),
    ("collective_timeout",
     r"Watchdog caught collective operation timeout|timed out after [0-9]+ ?ms|ran for [0-9]+ milliseconds before timing out"),
    ("exception",
     r"hit an exception|^Error in request|^Traceback \(most recent call last\)|crashed with exit code|Received sigquit"
     r"|SIGQUIT received|Pyspy|^Exception in |Exception:"),
    ("deferred_release", r"Deferred KV release"),
    ("retract", r"KV cache pool is full\. Retract requests|#retracted_reqs"),
    ("req_time_stats", r"^ReqTimeStats\("),
    ("hicache", r"HiCache|[Hh]icache|hierarchical KV host pool|Finished backup request"),
    # a notification payload {room}_kv_{chunk}_{is_last}[_{rank}], {room}_aux, {room}_state_..., {room}_stg_...
    # with an optional nixlv2_<gen>_ prefix (NIXL.md §10.3); only DEBUG logging prints them
    ("transfer_notif", r"(?:^|[\s'\"=:(\[])(?:nixlv2_[0-9]+_)?[0-9]{1,19}_(?:kv_[0-9]+_(?:[01]|True|False)|aux\b|aux_nokv_|state_[0-9]|stg_[0-9])"),
    # prefill learned the decode destination of a room (NIXL debug lines, SGLANG.md §9.6)
    ("bootstrapped", r"room=[0-9]+ is bootstrapped|got info room=[0-9]+"),
    ("nixl", r"NIXL|[Nn]ixl|FakeKVSender|KVManager"),
    ("bootstrap", r"[Bb]ootstrap|boostrap|Register KVArgs|Attempting to reconnect|dp_rank=[0-9]+ for bootstrap_room"),
    ("warmup", r"[Ww]armup"),
    ("shutdown", r"SIGTERM received|Gracefully exiting|Schedulers still alive|Shutting down"),
    ("startup",
     r"max_total_num_tokens=|fired up and ready|Started server process|Uvicorn running|Application startup"
     r"|Waiting for application startup|server_args=|Load weight|Capture cuda graph|Init torch distributed"),
]
# Messages that carry no prefix but are still unmistakably sglang / NIXL binding output
# (logs copied out of a UI, prints of the NIXL python binding, SGLANG.md §9.6, NIXL.md §6).
RE_BARE_KNOWN = (
    r"^(?:Prefill transfer failed|Decode transfer failed|Unexpected transfer worker error|Prefill bootstrap failed"
    r"|Decode handshake failed|Context corruption detected|KV checksum mismatch|NIXL transfer encountered ERR"
    r"|Scheduler hit an exception|Received sigquit|Health check failed|Lost connection with prefill"
    r"|Backend \w+ was instantiated|Initialized NIXL agent|Loaded plugin|Created NIXL agent|NIXL "
    r"|(?:Prefill|Decode) batch[., ]|Receive: |Finish: |Abort |Request [0-9]+ timed out"
    # NIXL python logger from 0.6.0: `<date> <time> NIXL <LEVEL> <file>.py:<line> <msg>` (NIXL.md §6)
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)? NIXL +[A-Z]+ +\S+\.py:[0-9]+ "
    # sglang NIXL connector lines copied without their prefix (NIXL.md §10.5)
    r"|Received abort notification for room|Sent abort notification for room|Reconnected NIXL peer"
    r"|Register KVArgs from|got info room=|room=[0-9]+ is bootstrapped|sending kvcache to|KVSender "
    r"|Transfer for room [0-9]+ failed|Failed to (?:send|notify|read NIXL))"
)

FAILURE_KINDS = ("transfer_failed", "bootstrap_failed", "abort", "corruption_detected", "checksum_mismatch",
                 "watchdog_timeout", "health_check_failed", "collective_timeout", "exception", "nixl_error",
                 "ucx_error")
SEVERITY_BY_KIND = {
    "transfer_failed": "error", "bootstrap_failed": "error", "corruption_detected": "error",
    "checksum_mismatch": "error", "watchdog_timeout": "fatal", "health_check_failed": "error",
    "collective_timeout": "error", "exception": "error", "abort": "warning", "deferred_release": "warning",
    "retract": "warning",
}
# Normalised failure reasons (SGLANG.md §9.3); matched against the KVTransferError text if any.
REASON_RULES: list[tuple[str, str]] = [
    ("waiting_timeout", r"KVPoll\.WaitingForInput|waiting_timeout|Timed out waiting for prefill completion"),
    ("bootstrap_timeout", r"KVPoll\.Bootstrapping"),
    ("aborted", r"Aborted by|^Abort|[Aa]bort notification|ABORT"),
    ("request_timeout", r"Request (?:waiting|running) timeout reached"),
    ("node_failure",
     r"Lost connection with prefill|healthy before, but now it is down|node failure|might be dead|could be dead"
     r"|is not alive|bootstrap_thread died"),
    ("room_conflict", r"Duplicate (?:or cancelled|decode) bootstrap room|follow_bootstrap_room conflict"),
    ("config", r"policy mismatch|does NOT support|layout mismatch|out of range"),
    ("bootstrap_info", r"Could not fetch|Failed to get prefill server info|Error fetching prefill|to prefill \S+ failed"),
    ("metadata_corruption", r"Context corruption detected|Metadata unexpectedly|Metadata corruption"),
    ("checksum_mismatch", r"[Cc]hecksum mismatch"),
    ("remote_disconnect",
     r"NIXL_ERR_REMOTE_DISCONNECT|RemoteDisconnect|remote agent \S+ was disconnected|NIXL peer \S+ disconnected"),
    ("transport", r"NIXL|UCX|Work Request Flushed|KVSender|[Ss]ession \S+ (?:failed|is not alive)|Failed to send"),
    ("unknown_rank", r"unknown reason from another rank"),
    ("collective_timeout", r"timed out after [0-9]+ ?ms|collective operation timeout|milliseconds before timing out"),
    ("watchdog", r"[Ww]atchdog"),
    ("health_check", r"Health check failed"),
    ("transfer_error", r"KV transfer failed|Room marked Failed|transfer failed|KVTransferError"),
]
RID_PATTERNS = [
    r"rid='([^']*)'", r'"rid": ?"([^"]*)"', r"\brid=([^\s,)'\]]+)", r"'id': '([^']*)'",
    r"Request ([0-9a-fA-F-]{16,}) \(bootstrap_room", r"\breq=([^\s,]+)", r"^Req (\S+) ", r"^Request (\S+) exceeds",
    r"[Rr]equest (\S+), bootstrap_room",
]
ROOM_PATTERNS = [
    r"bootstrap_room[=:] ?'?([0-9]+)", r'"bootstrap_room": ?"?([0-9]+)', r"\broom[= ]([0-9]+)", r"for room ([0-9]+)",
    r"^Request ([0-9]{1,19}) (?:timed out|waiting_timeout)", r"\(bootstrap_room: ([0-9]+)\)",
    r"bootstrap_room ([0-9]+)",
    r"(?:^|[\s'\"=:(\[])(?:nixlv2_[0-9]+_)?([0-9]{1,19})_(?:kv|aux|state|stg)(?:_|\b)",
]

# --- stats lines: known keys -> columns (SGLANG.md §14 normalisation) ---------------------------
# (column, raw keys, side or None, dtype)
STATS_KEYS: list[tuple[str, tuple[str, ...], str | None, str]] = [
    ("new_seq", ("#new-seq",), None, "int"),
    ("new_token", ("#new-token",), None, "int"),
    ("cached_token", ("#cached-token",), None, "int"),
    ("cache_hit_rate", ("cache hit rate",), None, "pct"),
    ("token_usage", ("token usage", "full token usage"), None, "float"),
    ("num_token", ("#token", "#full token"), None, "int"),
    ("running_req", ("#running-req",), None, "int"),
    ("queue_req", ("#queue-req",), None, "int"),
    ("pending_token", ("#pending-token",), None, "int"),
    ("bootstrap_req", ("#unbootstrapped-req", "#prealloc-req", "#bootstrap-req"), "prefill", "int"),
    ("inflight_req", ("#transferring-req", "#inflight-req"), "prefill", "int"),
    ("optimistic_req", ("#optimistic-req",), None, "int"),
    ("prealloc_req", ("#prealloc-req",), "decode", "int"),
    ("transfer_req", ("#transfer-req",), "decode", "int"),
    ("retracted_req", ("#retracted-req",), None, "int"),
    ("host_receive_req", ("#host-receive-req",), None, "int"),
    ("prealloc_usage", ("pre-allocated usage",), None, "float"),
    ("gen_throughput", ("gen throughput (token/s)",), None, "float"),
    ("input_throughput", ("input throughput (token/s)",), None, "float"),
    ("cuda_graph", ("cuda graph", "cpu graph", "npu graph", "musa graph"), None, "bool"),
    ("accept_len", ("accept len",), None, "float"),
    ("accept_rate", ("accept rate",), None, "float"),
]
KNOWN_STATS_KEYS = sorted({k for _, keys, _, _ in STATS_KEYS for k in keys})

ROLE_PREFILL = (r"#unbootstrapped-req|#transferring-req|#bootstrap-req|#inflight-req|Prefill transfer failed"
                r"|Prefill bootstrap failed|FakeKVSender|Registered Prefill|Prefill batch[.,].*#prealloc-req")
ROLE_DECODE = r"pre-allocated usage|#transfer-req|Decode transfer failed|Decode handshake failed|Context corruption detected"


def _alt(patterns: list[str]) -> pl.Expr:
    """First capture of the first pattern that matches `message`."""
    return pl.coalesce([pl.col("message").str.extract(p, 1) for p in patterns])


def _kind_expr(rules: list[tuple[str, str]], col: str, default=None) -> pl.Expr:
    expr = pl.lit(default, dtype=pl.Utf8)
    for kind, pat in reversed(rules):
        expr = pl.when(pl.col(col).str.contains(pat)).then(pl.lit(kind)).otherwise(expr)
    return expr


# Below this many rows a polars call costs more than its work (~0.2 ms each, issue 5): one
# expression with every pattern beats a call per pattern on the rows still left.
FEW_ROWS = 512


def _first_kind(text: pl.Series, rules: list[tuple[str, str]], default=None) -> pl.Series:
    """`_kind_expr(rules, ...)` on `text`, each rule run only on the rows no earlier rule took.

    The when-chain runs every rule's regex on every row. Most lines take one of the first rules
    (request logs): after it they leave, and the later rules see only the few rows left. On a
    few rows the when-chain, one call, is the faster.
    """
    if text.len() <= FEW_ROWS:
        return text.to_frame().select(_kind_expr(rules, text.name, default).alias(text.name)).to_series()
    out = pl.repeat(default, text.len(), dtype=pl.Utf8, eager=True).alias(text.name)
    idx = pl.arange(0, text.len(), eager=True)
    for kind, pat in rules:
        if text.is_empty():
            break
        hit = text.str.contains(pat).fill_null(False)
        if hit.any():
            out = out.scatter(idx.filter(hit), kind)
            idx, text = idx.filter(~hit), text.filter(~hit)
    return out


def _groups(col: str | pl.Expr, pattern: str) -> pl.Expr:
    """`str.extract_groups(pattern)` for a pattern ending in `(.*)$`, without capturing the tail.

    Capturing a long tail costs the regex engine a pass over every byte of every matching line
    (~0.5 s per 32 MiB block for the sglang prefix alone): match only the head, and take the tail as
    the rest of the string after it. Same fields, same values.
    """
    expr = pl.col(col) if isinstance(col, str) else col
    assert pattern.startswith("^") and pattern.endswith("(.*)$"), pattern
    n = re.compile(pattern).groups
    head = expr.str.extract_groups("^(" + pattern[1:-len("(.*)$")] + ")")
    whole = head.struct.field("1")
    tail = pl.when(whole.is_not_null()).then(expr.str.slice(whole.str.len_chars()))
    return pl.struct(*[head.struct.field(str(i + 1)).alias(str(i)) for i in range(1, n)], tail.alias(str(n)))


def _with_groups(df: pl.DataFrame, col: str, gates: dict[str, pl.Expr], **patterns: str) -> pl.DataFrame:
    """`df` with a column `name` holding `_groups(col, pattern)` for each `name=pattern`.

    The `_groups` expression re-runs the head regex for each field it yields: here it runs once per
    pattern, into a column the fields are then taken from (same struct, same fields, same buffers).
    `gates[name]` is a cheap test every line the pattern matches passes: with no line passing,
    the fields are null without compiling the regex (polars keeps few compiled; issue 5).
    """
    heads = {}
    for name, p in patterns.items():
        head = "^(" + p[1:-len("(.*)$")] + ")"
        if name in gates and not df.select(gates[name].fill_null(False).any()).item():
            fields = {str(i + 1): pl.Utf8 for i in range(re.compile(head).groups)}
            heads[f"_h{name}"] = pl.lit(None, dtype=pl.Struct(fields))
        else:
            heads[f"_h{name}"] = pl.col(col).str.extract_groups(head)
    df = df.with_columns(**heads)
    structs = {}
    for name, p in patterns.items():
        assert p.startswith("^") and p.endswith("(.*)$"), p
        n = re.compile(p).groups
        head = pl.col(f"_h{name}")
        whole = head.struct.field("1")
        tail = pl.when(whole.is_not_null()).then(pl.col(col).str.slice(whole.str.len_chars()))
        structs[name] = pl.struct(*[head.struct.field(str(i + 1)).alias(str(i)) for i in range(1, n)], tail.alias(str(n)))
    return df.with_columns(**structs).drop(*heads)


def _local_to_utc(expr: pl.Expr, tz: str) -> pl.Expr:
    return expr.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC")


def _sglang_time(date: pl.Expr, time: pl.Expr, ms: pl.Expr, year: int) -> tuple[pl.Expr, pl.Expr]:
    """(ts_raw, local datetime) of a sglang prefix: full date or MM-DD (year from context, SGLANG.md §2)."""
    full = pl.when(date.str.len_chars() == 5).then(pl.lit(f"{year}-") + date).otherwise(date)
    raw = pl.concat_str(date, pl.lit(" "), time, pl.when(ms.is_not_null()).then(pl.lit(".") + ms).otherwise(pl.lit("")))
    local = pl.concat_str(full, pl.lit(" "), time, pl.lit("."), ms.fill_null("000")).str.to_datetime(
        "%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    return raw, local


def _rank_cols(tags: pl.Expr) -> dict[str, pl.Expr]:
    # in ' DP0 TP0' the TP pattern must not match inside ATTN_CP / MOE_DP: anchor on the space; a
    # tag beyond Int32 (a garbled line) is null rather than the end of the ingest
    return {r: tags.str.extract(rf" {r.removesuffix('_rank').upper()}([0-9]+)", 1).cast(pl.Int32, strict=False)
            for r in RANKS}


def _outer_ts(text: pl.Expr) -> pl.Expr:
    """A shipper's ISO-8601 time (CRI, docker), to UTC."""
    return (text.str.replace(r"Z$", "+00:00").str.replace(r"([+-][0-9]{2})([0-9]{2})$", "$1:$2")
            .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us", time_zone="UTC"))


def _cri_ts(df: pl.DataFrame) -> pl.Expr:
    """`_outer_ts` of the `cri` column: its two regex replaces cost as much on a column of nulls."""
    if df["cri"].null_count() == df.height:
        return pl.lit(None, dtype=pl.Datetime("us", "UTC"))
    return _outer_ts(pl.col("cri"))


def _strip_wrappers(df: pl.DataFrame) -> pl.DataFrame:
    """Split the shipper wrapper (§3) off every line: body, prefix, outer_ts (absolute, UTC) or None."""
    line = pl.col("line")
    is_json = line.str.starts_with('{"log":')
    iso = line.str.slice(4, 1) == "-"  # `\d{4}-` starts both shippers' times
    gates = {"_cri": iso & line.str.contains("std", literal=True), "_dock": iso,
             "_kib": line.str.contains(" @ ", literal=True)}
    df = _with_groups(df, "line", gates, _cri=RE_CRI, _dock=RE_DOCKER_T, _kib=RE_KIBANA).with_columns(
        _json_log=pl.when(is_json).then(line.str.json_path_match("$.log")),
        _json_time=pl.when(is_json).then(line.str.json_path_match("$.time")),
    )
    body = pl.coalesce(
        pl.col("_json_log").str.strip_suffix("\n"),
        pl.col("_cri").struct.field("3"),
        pl.col("_dock").struct.field("2"),
        pl.col("_kib").struct.field("2"),
        line,
    )
    outer_text = pl.coalesce(pl.col("_json_time"), pl.col("_cri").struct.field("1"), pl.col("_dock").struct.field("1"))
    prefix = (
        pl.when(pl.col("_json_log").is_not_null()).then(pl.concat_str(pl.lit("docker-json "), pl.col("_json_time")))
        .when(pl.col("_cri").struct.field("3").is_not_null())
        .then(pl.concat_str(pl.col("_cri").struct.field("1"), pl.lit(" "), pl.col("_cri").struct.field("2")))
        .when(pl.col("_dock").struct.field("2").is_not_null()).then(pl.col("_dock").struct.field("1"))
        .when(pl.col("_kib").struct.field("2").is_not_null()).then(pl.col("_kib").struct.field("1"))
    )
    df = df.with_columns(
        body=body.str.strip_chars_end(" \t\r"),
        prefix=prefix,
        partial=pl.col("_cri").struct.field("2") == "P",
        kibana_ts=pl.col("_kib").struct.field("1").str.to_datetime("%b %d, %Y @ %H:%M:%S%.f", strict=False,
                                                                   time_unit="us"),
        outer_ts=_outer_ts(outer_text),
    ).drop("_json_log", "_json_time", "_cri", "_dock", "_kib")
    if not df.select(pl.col("body").str.slice(1).str.contains("[", literal=True).any()).item():
        return df  # nothing can be glued in front of a `[...]` prefix
    glued = pl.col("body").str.extract_groups(RE_GLUED)
    is_glued = ~pl.col("body").str.contains(r"^(?:\[[0-9]|[IWEF][0-9]{4} |\[rank[0-9])") & glued.struct.field("2").is_not_null()
    return df.with_columns(
        prefix=pl.when(is_glued).then(pl.concat_str(pl.col("prefix").fill_null(""), glued.struct.field("1")))
        .otherwise(pl.col("prefix")),
        body=pl.when(is_glued).then(glued.struct.field("2")).otherwise(pl.col("body")),
    )


def _join_partials(df: pl.DataFrame) -> pl.DataFrame:
    """k8s CRI `P` records are pieces of one long line: join them up to the next `F` record."""
    if not df["partial"].any():
        return df.with_columns(folded=pl.lit(0, dtype=pl.Int64))
    # a record ends at an F line; group = number of F lines before this one
    grp = (~pl.col("partial")).cast(pl.Int64).cum_sum().shift(1, fill_value=0)
    agg = (
        df.with_columns(_g=grp)
        .group_by("_g", maintain_order=True)
        .agg(pl.all().exclude("body").first(), pl.col("body").str.join(""), folded=pl.len() - 1)
    )
    return agg.drop("_g").with_columns(pl.col("folded").cast(pl.Int64))


def _classify(df: pl.DataFrame, ctx: Context, year: int) -> pl.DataFrame:
    """Recognise every line's family; extract its time, rank tags and message."""
    body = pl.col("body")
    gates = {"_sg": body.str.starts_with("["), "_cu": body.str.contains("][", literal=True),
             "_gl": body.str.slice(0, 1).is_in(["I", "W", "E", "F"]), "_ux": body.str.contains("UCX", literal=True),
             "_c10": body.str.starts_with("[rank"), "_nc": body.str.contains(" NCCL ", literal=True)}
    df = _with_groups(df, "body", gates, _sg=RE_SGLANG, _cu=RE_SGLANG_CUSTOM, _gl=RE_GLOG, _ux=RE_UCX, _c10=RE_C10D,
                      _nc=RE_NCCL)
    f = lambda s, i: pl.col(s).struct.field(str(i))  # noqa: E731
    # a when-chain runs every branch on every row: the two regexes below only on the lines no
    # sglang prefix decides (null never takes a branch)
    undecided = pl.when(f("_cu", 5).is_null() & f("_sg", 5).is_null()).then(body)
    family = (
        pl.when(f("_cu", 5).is_not_null()).then(pl.lit("sglang"))
        .when(f("_sg", 5).is_not_null()).then(pl.lit("sglang"))
        .when(undecided.str.contains(RE_UVICORN_LEVEL)).then(pl.lit("uvicorn"))
        .when(f("_gl", 8).is_not_null()).then(pl.lit("glog"))
        .when(f("_ux", 8).is_not_null()).then(pl.lit("ucx"))
        .when(f("_c10", 9).is_not_null()).then(pl.lit("c10d"))
        .when(f("_nc", 6).is_not_null()).then(pl.lit("nccl"))
        .when(undecided.str.contains(RE_BARE_KNOWN)).then(pl.lit("bare"))
    )
    # the custom-config shape also matches the plain prefix, so it is tried first
    message = pl.coalesce(f("_cu", 5), f("_sg", 5), f("_gl", 8), f("_ux", 8), f("_c10", 9), f("_nc", 6), body)
    sg_raw, sg_local = _sglang_time(pl.coalesce(f("_cu", 1), f("_sg", 1)), pl.coalesce(f("_cu", 2), f("_sg", 2)),
                                    pl.coalesce(f("_cu", 3), f("_sg", 3)), year)
    gl_raw = pl.concat_str(f("_gl", 1), f("_gl", 2), f("_gl", 3), pl.lit(" "), f("_gl", 4))
    gl_local = pl.concat_str(pl.lit(f"{year}-"), f("_gl", 2), pl.lit("-"), f("_gl", 3), pl.lit(" "), f("_gl", 4)
                             ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    c10_raw = pl.concat_str(f("_c10", 2), f("_c10", 3), f("_c10", 4), pl.lit(" "), f("_c10", 5), pl.lit("."), f("_c10", 6))
    c10_local = pl.concat_str(pl.lit(f"{year}-"), f("_c10", 3).str.zfill(2), pl.lit("-"), f("_c10", 4), pl.lit(" "),
                              f("_c10", 5), pl.lit("."), f("_c10", 6).str.slice(0, 6)
                              ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    ux_ts = (f("_ux", 1).cast(pl.Float64, strict=False) * 1e6).round().cast(pl.Int64).cast(pl.Datetime("us", "UTC"))
    local = pl.coalesce(sg_local, gl_local, c10_local)
    rank_cols = _rank_cols(f("_sg", 4))
    level = (
        pl.when(f("_cu", 4).is_not_null()).then(f("_cu", 4))
        .when(f("_gl", 1).is_not_null()).then(f("_gl", 1))
        .when(f("_ux", 7).is_not_null()).then(f("_ux", 7))
        .when(f("_c10", 2).is_not_null()).then(f("_c10", 2))
        .when(f("_nc", 5).is_not_null()).then(f("_nc", 5))
    )
    df = df.with_columns(
        family=family,
        message=message,
        ts_raw=pl.coalesce(sg_raw, gl_raw, f("_ux", 1), c10_raw, pl.col("prefix").str.extract(r"^(\S+)", 1)),
        _local=local,
        _ux_ts=ux_ts,
        level=level,
        glog_file=pl.coalesce(f("_gl", 6), f("_ux", 5), f("_c10", 7)),
        peer_host=pl.coalesce(f("_ux", 2), f("_nc", 1)),
        c10_rank=f("_c10", 1).cast(pl.Int32, strict=False),
        **rank_cols,
    ).drop("_sg", "_cu", "_gl", "_ux", "_c10", "_nc")
    # Kibana's outer clock is the viewer's zone: learn its offset to the inner clock from lines
    # that carry both (rounded to 15 min, SGLANG.md §3), and use it for lines that carry only it.
    # Several blocks (`_blk`): learnt from the first block that teaches it, for it and those after,
    # as when the blocks are read one after another.
    known = pl.lit(ctx.outer_offset_s is not None)
    if ctx.outer_offset_s is None and df["kibana_ts"].is_not_null().any():
        blocks = df.filter(pl.col("kibana_ts").is_not_null())["_blk"].unique().sort() if "_blk" in df.columns else [None]
        for b in blocks:
            rows = df if b is None else df.filter(pl.col("_blk") == b)
            d = rows.select((pl.col("_local") - pl.col("kibana_ts")).dt.total_seconds().median()).item()
            if d is not None:
                ctx.outer_offset_s = round(d / 900) * 900
                ctx.notes.append(f"Kibana viewer clock is {-ctx.outer_offset_s / 3600:+.2f} h from the log's clock")
                known = pl.lit(True) if b is None else pl.col("_blk") >= b
                break
    kib_local = pl.col("kibana_ts") + pl.duration(seconds=ctx.outer_offset_s or 0)
    local_all = pl.coalesce(pl.col("_local"), pl.when(known).then(kib_local))
    return df.with_columns(
        ts=pl.coalesce(pl.col("outer_ts"), _local_to_utc(local_all, ctx.tz), pl.col("_ux_ts"))
    ).drop("_local", "_ux_ts")


def _fold_continuations(df: pl.DataFrame) -> pl.DataFrame:
    """Decide which unrecognised lines are traceback bodies and attach them to their record.

    Adds `_cont` (a body line of the record above), `_is_event` (an event head), `_grp` (the
    record a line belongs to: a run of lines from its head) and `_head_ok` (the head is an event).
    """
    body = pl.col("body")
    # `_brk`: the line right above was a stats line taken out by the fast path (`_parse_block`).
    # A stats line is a non-event head: it starts a group and is never indented.
    brk = pl.col("_brk") if "_brk" in df.columns else pl.lit(False)
    # The body regexes run only where they decide something (issue 5): on the lines with no
    # family, a few among tens of thousands, and on the line above each (its indentation).
    lone = pl.col("family").is_null()
    indented = pl.when(lone.shift(-1, fill_value=False)).then(body).str.contains(r"^\s+\S").fill_null(False)
    lone_body = pl.when(lone).then(body)
    # a chained traceback puts a blank line before and after "During handling of the above
    # exception..." (or "The above exception was the direct cause..."): those blank lines are
    # part of it. `_brk` says whether the row above is the line above.
    chain = lone_body.str.contains(RE_TB_CHAIN).fill_null(False)
    brk_below = pl.col("_brk").shift(-1, fill_value=False) if "_brk" in df.columns else pl.lit(False)
    blank_in_chain = lone & (body == "") & (
        (chain.shift(1, fill_value=False) & ~brk) | (chain.shift(-1, fill_value=False) & ~brk_below))
    tb_like = (lone_body.str.contains(RE_TB) | (lone_body.str.contains(RE_EXC_LINE) & indented.shift(1, fill_value=False)
                                                & ~brk)) | blank_in_chain
    df = df.with_columns(
        _cont=lone & tb_like,
        _is_event=pl.col("family").is_not_null() & ~pl.col("message").str.contains(RE_STATS),
    )
    start = ~pl.col("_cont") | brk
    grp = start.cast(pl.Int64).cum_sum()
    # a record is a run of lines: its head's value, carried down the run (no group-by)
    head_ok = pl.when(start | (pl.int_range(pl.len()) == 0)).then(pl.col("_is_event")).forward_fill()
    df = df.with_columns(_grp=grp, _head_ok=head_ok)
    # A traceback with no event above it (file start, or after a stats line) opens its own record.
    opens = pl.col("_cont") & ~pl.col("_head_ok") & body.str.starts_with("Traceback (most recent call last)")
    df = df.with_columns(
        family=pl.when(opens).then(pl.lit("python")).otherwise(pl.col("family")),
        _cont=pl.col("_cont") & ~opens,
        _is_event=pl.col("_is_event") | opens,
    )
    df = df.with_columns(_grp=grp, _head_ok=head_ok)
    # body lines under a non-event head stay unparsed (they keep their own line numbers)
    return df.with_columns(_cont=pl.col("_cont") & pl.col("_head_ok"))


def _on_rows(df: pl.DataFrame, mask: pl.Series | pl.Expr, fn, schema: dict) -> pl.DataFrame:
    """Add the columns `fn(sub)` computes (`schema`) on the rows of `df` where `mask` holds; null elsewhere.

    A regex in `when(..).then(..)` still runs on every row: running it on the few rows that can
    match (a kind, or a literal every pattern of the family needs) gives the same columns. With
    no such row `fn` is not run at all: polars compiles a regex even for no rows, and keeps only
    a few compiled (issue 5).
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
    return df.with_columns([
        pl.Series(c.name, dtype=c.dtype).extend_constant(None, df.height).scatter(idx, c) for c in sub.get_columns()
    ])


_REGEX_THREADS: dict[tuple[str, str], object] = {}


def _regex_thread(family: str, fn, *args):
    """`fn(*args)` on the thread kept for one family of regexes and the calling parse thread,
    the caller waiting.

    Polars compiles a regex on the thread that runs it (with one pool thread, the calling one)
    and keeps the last 32 per thread. A pass runs ~100 patterns, so on one thread each was
    compiled again every pass: ~17 ms of ~230 (issue 5). Each family (KIND_RULES, REASON_RULES,
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


# Literals each pattern of a family needs: a row with none of them cannot match any of them.
PRE_RID = r"rid|'id': '|equest |req=|Req "
PRE_ROOM = r"room|Request |_kv|_aux|_state|_stg"
PRE_REQ = r"finish_reason|_tokens|e2e_latency|status_code"
PRE_PEER = r"(?:to|from) [0-9]|bootstrap_addr: "
RE_ACCESS = r'(?:^INFO:\s+)?(\S+?)(?: - \S+)? (?:- )?(?:\[[^\]]+\] )?"(\S+) (\S+) [^"]*" ([0-9]{3})'
# uvicorn's own access line, all ASCII: wherever it matches, RE_ACCESS matches at the start with the
# same groups (no quote or space inside a field leaves RE_ACCESS another way), and its captures cost
# the regex engine a quarter of RE_ACCESS's lazy, Unicode ones
RE_ACCESS_UVICORN = r'^INFO: +([!#-~]+) - "([A-Z]+) ([!#-~]+) HTTP/[0-9.]+" ([0-9]{3})'


def _uvicorn_level(msg: pl.Expr) -> pl.Expr:
    """Group 1 of RE_UVICORN_LEVEL.

    Its `(.*)$` scans the whole line for a newline: on a line without one the level word, a colon
    and a space decide.
    """
    has_nl = msg.str.contains("\n", literal=True)
    return pl.coalesce(
        pl.when(~has_nl).then(msg).str.extract(r"^(INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s", 1),
        pl.when(has_nl).then(msg).str.extract(RE_UVICORN_LEVEL, 1),
    )


def _access_groups(message: pl.Series) -> pl.DataFrame:
    """The groups of RE_ACCESS (columns "1".."4"): RE_ACCESS_UVICORN first, RE_ACCESS on the rest."""
    a = message.str.extract_groups(RE_ACCESS_UVICORN).struct.unnest()
    miss = a["1"].is_null()
    if miss.any():
        b = message.filter(miss).str.extract_groups(RE_ACCESS).struct.unnest()
        a = a.with_columns(a[c].scatter(miss.arg_true(), b[c]) for c in a.columns)
    return a


def _events(ev: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    return _event_rooms(_event_fields(ev, ctx))


def _event_fields(ev: pl.DataFrame, ctx: Context) -> pl.DataFrame:
    """Kind, severity, source and the fields each event line carries on its own."""
    msg = pl.col("message")
    fam = pl.col("family")
    is_access = msg.str.contains(r'^INFO:\s+\S+ - "') | msg.str.contains(r'^\S+ (?:- \S+ )?\[[^\]]+\] "\S+ \S+ HTTP')
    lvl_uv = _uvicorn_level(msg)
    glog_nixl = pl.col("glog_file").str.contains(r"(?i)nixl|ucx")
    glog_mc = pl.col("glog_file").str.contains(r"(?i)transfer_engine|mooncake|rdma|transport")
    is_err_level = pl.col("level").is_in(["E", "F", "ERROR", "FATAL", "CRITICAL"])
    timeout_txt = msg.str.contains(r"timed out after|collective operation timeout|before timing out|[Tt]imeout")
    # every branch before the sglang message rules gives a kind; those rules run on the rest only
    kind0 = (
        pl.when(fam == "uvicorn").then(pl.when(is_access).then(pl.lit("http_access")).otherwise(pl.lit("http_log")))
        .when(fam.is_in(["sglang", "bare"]) & is_access).then(pl.lit("http_access"))
        .when(fam.is_in(["sglang", "bare"]) & pl.col("_lvl_uv").is_not_null()).then(pl.lit("http_log"))
        .when(fam == "glog").then(
            pl.when(glog_nixl).then(pl.when(is_err_level).then(pl.lit("nixl_error")).otherwise(pl.lit("nixl_log")))
            .when(glog_mc).then(pl.when(is_err_level).then(pl.lit("mooncake_error")).otherwise(pl.lit("mooncake_log")))
            .otherwise(pl.when(is_err_level).then(pl.lit("glog_error")).otherwise(pl.lit("glog"))))
        .when(fam == "ucx").then(
            pl.when(pl.col("level").is_in(["ERROR", "FATAL"])).then(pl.lit("ucx_error"))
            .when(pl.col("level") == "WARN").then(pl.lit("ucx_warning")).otherwise(pl.lit("ucx_log")))
        .when(fam.is_in(["c10d", "nccl"])).then(
            pl.when(timeout_txt).then(pl.lit("collective_timeout"))
            .otherwise(pl.concat_str(fam, pl.lit("_log"))))
        .when(fam == "python").then(pl.lit("exception"))
        .when(msg.str.contains(r"^(?:Backend \w+ was instantiated|Initialized NIXL agent|Created NIXL agent|Loaded plugin)"))
        .then(pl.lit("nixl_log"))
    )
    ev = ev.with_columns(_lvl_uv=lvl_uv).with_columns(_k0=kind0)
    ev = _on_rows(ev, pl.col("_k0").is_null(),
                  lambda d: _regex_thread("kinds", _first_kind, d["message"], KIND_RULES, "log").alias("_sgk").to_frame(),
                  {"_sgk": pl.Utf8})
    level_sev = (
        pl.when(pl.col("level").is_in(["E", "ERROR", "CRITICAL"])).then(pl.lit("error"))
        .when(pl.col("level").is_in(["F", "FATAL"])).then(pl.lit("fatal"))
        .when(pl.col("level").is_in(["W", "WARN", "WARNING"])).then(pl.lit("warning"))
        .when(pl.col("level").is_in(["I", "INFO"])).then(pl.lit("info"))
        .when(pl.col("level").is_in(["DEBUG", "TRACE", "DIAG", "D"])).then(pl.lit("debug"))
    )
    uv_sev = pl.col("_lvl_uv").str.to_lowercase().replace({"critical": "fatal", "trace": "debug"})
    ev = ev.with_columns(kind=pl.coalesce("_k0", "_sgk"), _uv_sev=uv_sev, _lvl_sev=level_sev).drop("_lvl_uv", "_k0", "_sgk")
    ev = ev.with_columns(
        severity=pl.coalesce(pl.col("_lvl_sev"), pl.col("_uv_sev"),
                             pl.col("kind").replace_strict(SEVERITY_BY_KIND, default="info")),
        source=pl.when(fam == "bare").then(pl.lit("sglang")).when(fam == "sglang").then(
            pl.when(pl.col("kind").is_in(["request_received", "request_finished"])).then(pl.lit("request_log"))
            .when(pl.col("kind").is_in(["http_access", "http_log"])).then(pl.lit("uvicorn"))
            .otherwise(pl.lit("sglang"))).otherwise(fam),
    )

    def reason(d: pl.DataFrame) -> pl.DataFrame:
        kvt = msg.str.extract(r"KVTransferError\(bootstrap_room=[0-9]+\): (.*)$", 1)
        d = d.with_columns(_reason_src=pl.coalesce(kvt, msg.str.extract(r"with exception (.*)$", 1), msg))
        return d.select(reason=pl.coalesce(pl.lit(_first_kind(d["_reason_src"], REASON_RULES)),
                                           pl.when(pl.col("kind") == "abort").then(pl.lit("aborted")), pl.lit("other")))

    def room(d: pl.DataFrame) -> pl.DataFrame:
        r = pl.lit(_regex_thread("ids", _first_capture, d, ROOM_PATTERNS)).cast(pl.UInt64, strict=False)
        return d.select(bootstrap_room=pl.when(r < (1 << 63)).then(r).cast(pl.Int64))

    def access(d: pl.DataFrame) -> pl.DataFrame:
        a = _access_groups(d["message"])
        return a.select(_acc_status="4", http_method="2", http_path="3", _acc_peer="1")

    def request(d: pl.DataFrame) -> pl.DataFrame:
        return d.select(
            finish_reason=msg.str.extract(r"""['"]finish_reason['"]: \{['"]type['"]: ['"](\w+)""", 1),
            prompt_tokens=msg.str.extract(r"""['"]prompt_tokens['"]: ([0-9]+)""", 1).cast(pl.Int64, strict=False),
            completion_tokens=msg.str.extract(r"""['"]completion_tokens['"]: ([0-9]+)""", 1).cast(pl.Int64, strict=False),
            cached_tokens=msg.str.extract(r"""['"]cached_tokens['"]: ([0-9]+)""", 1).cast(pl.Int64, strict=False),
            e2e_latency=msg.str.extract(r"""['"]e2e_latency['"]: ([0-9.]+)""", 1).cast(pl.Float64, strict=False),
            _status=msg.str.extract(r"""['"]status_code['"]: ([0-9]{3})""", 1),
        )

    def json_ts(d: pl.DataFrame) -> pl.DataFrame:
        t = msg.str.extract(r'^\{"timestamp": ?"([^"]+)"', 1).str.to_datetime(
            "%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us")
        return d.select(_jts=pl.when(pl.col("outer_ts").is_null()).then(_local_to_utc(t, ctx.tz)))

    utf8, i64 = pl.Utf8, pl.Int64
    ev = _on_rows(ev, pl.col("kind").is_in(list(FAILURE_KINDS) + ["deferred_release"]),
                  lambda d: _regex_thread("reasons", reason, d), {"reason": utf8})
    ev = _on_rows(ev, msg.str.contains(PRE_RID),
                  lambda d: d.select(rid=_regex_thread("ids", _first_capture, d, RID_PATTERNS)), {"rid": utf8})
    ev = _on_rows(ev, msg.str.contains(PRE_ROOM), room, {"bootstrap_room": i64})
    ev = _on_rows(ev, msg.str.contains(PRE_REQ), lambda d: _regex_thread("ids", request, d), {
        "finish_reason": utf8, "prompt_tokens": i64, "completion_tokens": i64, "cached_tokens": i64,
        "e2e_latency": pl.Float64, "_status": utf8})
    ev = _on_rows(ev, pl.col("kind") == "http_access", access,
                  {"_acc_status": utf8, "http_method": utf8, "http_path": utf8, "_acc_peer": utf8})
    ev = _on_rows(ev, msg.str.contains(PRE_PEER), lambda d: d.select(
        _peer=pl.coalesce(msg.str.extract(r"(?:to|from) ([0-9]{1,3}(?:\.[0-9]{1,3}){3}:[0-9]+)", 1),
                          msg.str.extract(r"bootstrap_addr: ([^)\s,]+)", 1))), {"_peer": utf8})
    ev = _on_rows(ev, msg.str.starts_with('{"timestamp"'), json_ts, {"_jts": pl.Datetime("us", "UTC")})
    # the literal as the mask (no regex to compile when no line has it); `\brank=` then leaves out
    # the `dp_rank=None` and friends of request logs
    ev = _on_rows(ev, pl.col("tp_rank").is_null() & msg.str.contains("rank=", literal=True),
                  lambda d: d.select(_rank=msg.str.extract(r"\brank=([0-9]+)", 1).cast(pl.Int32, strict=False)),
                  {"_rank": pl.Int32})
    ev = ev.with_columns(
        http_status=pl.coalesce("_acc_status", "_status").cast(pl.Int32, strict=False),
        peer=pl.coalesce("_acc_peer", "_peer", "peer_host"),
        # request logs in JSON carry a µs local timestamp: better than the prefix second
        ts=pl.coalesce("_jts", "ts"),
        tp_rank=pl.coalesce(pl.col("tp_rank"), pl.col("_rank"), pl.col("c10_rank")),
    ).drop("_acc_status", "_status", "_acc_peer", "_peer", "_jts", "_rank")
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
        lent = ev.filter(fail).with_columns(
            _fr=ffill(pl.when(pl.col("rid").is_null()).then(pl.col("bootstrap_room"))),
            _fl=ffill(pl.when(pl.col("rid").is_null() & pl.col("bootstrap_room").is_not_null()).then(pl.col("line_no"))),
        ).select(pl.when(pl.col("bootstrap_room").is_null() & (pl.col("line_no") - pl.col("_fl") <= 50))
                 .then(pl.col("_fr")).otherwise(pl.col("bootstrap_room"))).to_series()
        ev = ev.with_columns(ev["bootstrap_room"].scatter(fail.arg_true(), lent))
    # a line cut before its room still names its rid: take the room the same rid has elsewhere
    if not ev.select((pl.col("rid").is_not_null() & pl.col("bootstrap_room").is_null()).any()).item():
        return ev
    return ev.with_columns(
        bootstrap_room=pl.coalesce(
            pl.col("bootstrap_room"),
            pl.when(pl.col("rid").is_not_null()).then(pl.col("bootstrap_room").drop_nulls().first().over([*blk, "rid"])),
        )
    )


# A stats body that is a plain `key: value, key: value` list (no quote, comma or colon inside an
# item, SGLANG.md §5): the common case, parsed in long form; anything else takes the general path.
RE_PLAIN_ITEMS = r"^[^,:]+: [^,:]*(?:, [^,:]+: [^,:]*)*$"


def _stats_value(raw: pl.Expr, typ: str) -> pl.Expr:
    if typ == "int":
        return raw.cast(pl.Int64, strict=False)
    if typ == "float":
        return raw.cast(pl.Float64, strict=False)
    if typ == "pct":
        return raw.str.strip_suffix("%").cast(pl.Float64, strict=False) / 100.0
    return raw.replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)


def _stats_lead(st: pl.DataFrame) -> pl.DataFrame:
    """kind, iteration and item list of stats lines, from their message."""
    lead = _groups("message", RE_STATS)
    return st.with_columns(
        kind=lead.struct.field("1").str.to_lowercase(),
        _iter=lead.struct.field("2"),
        _body=lead.struct.field("3").str.strip_chars_end(", "),
    )


def _batches(st: pl.DataFrame) -> pl.DataFrame:
    """Batches rows from stats lines with `kind`, `_iter` and `_body` (see `_stats_lead`)."""
    done, st = _batches_by_keys(st)
    if st.height or not done:
        plain = st.select(pl.col("_iter").is_null() & ~pl.col("unterminated")
                          & pl.col("_body").str.contains(RE_PLAIN_ITEMS)).to_series()
        if not plain.any():
            done.append(_batches_general(st))
        elif plain.all():
            done.append(_batches_plain(st))
        else:
            done += [_batches_general(st.filter(~plain)), _batches_plain(st.filter(plain))]
    if len(done) == 1:
        return done[0]
    cols = done[0].columns
    return pl.concat([d.select(cols) for d in done]).sort("line_no")


def _stats_columns(kind: str) -> dict[str, str]:
    """Raw key -> column on one side (side-specific keys only on their side)."""
    m: dict[str, str] = {}
    for col, keys, side, _ in STATS_KEYS:
        if side in (None, kind):
            for k in keys:
                assert m.setdefault(k, col) == col, k
    return m


def _batches_by_keys(st: pl.DataFrame, rounds: int = 4) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """Stats lines that print the same plain keys in the same order as an earlier one, by one regex.

    A server prints one key sequence per side and version, so a few anchored regexes
    (`^k1: ([^,:]*), k2: ...$`, built from the first line of each sequence) take nearly every
    line; the values are the ones `_batches_plain` gives (first item of a column wins). Returns
    the frames done and the rows left for the general paths.
    """
    done: list[pl.DataFrame] = []
    cand = pl.col("_iter").is_null() & ~pl.col("unterminated")
    extra_t = pl.List(pl.Struct({"key": pl.Utf8, "value": pl.Utf8}))
    for _ in range(rounds):
        first = st.filter(cand).head(1)
        if first.height == 0:
            break
        kind, body = first["kind"][0], first["_body"][0]
        if kind not in ("prefill", "decode") or not re.fullmatch(RE_PLAIN_ITEMS, body):
            break
        keys = [it.split(": ", 1)[0] for it in body.split(", ")]
        pattern = "^" + ", ".join(pl.escape_regex(k) + ": ([^,:]*)" for k in keys) + "$"
        st = st.with_columns(_v=pl.when(cand & (pl.col("kind") == kind)).then(pl.col("_body").str.extract_groups(pattern)))
        hit = st["_v"].struct.field("1").is_not_null()
        sub = st.filter(hit)
        st = st.filter(~hit).drop("_v")
        v = lambda i: pl.col("_v").struct.field(str(i + 1))  # noqa: E731
        col_of = _stats_columns(kind)
        cols = {}
        for col, _, _, typ in STATS_KEYS:
            pos = next((i for i, k in enumerate(keys) if col_of.get(k) == col), None)
            cols[col] = _stats_value(v(pos).str.strip_chars() if pos is not None else pl.lit(None, dtype=pl.Utf8), typ)
        unknown = [(i, k) for i, k in enumerate(keys) if k not in KNOWN_STATS_KEYS]
        extra = (pl.concat_list([pl.struct(key=pl.lit(k, dtype=pl.Utf8), value=v(i)) for i, k in unknown]).cast(extra_t)
                 if unknown else pl.lit([], dtype=extra_t))
        graph = next((m.group(1) for k in keys if (m := re.fullmatch(r"(cuda|cpu|npu|musa) graph", k))), None)
        done.append(sub.with_columns(
            **cols, graph_backend=pl.lit(graph, dtype=pl.Utf8), extra=extra,
            tail=pl.lit(None, dtype=pl.Utf8), truncated=pl.col("unterminated"),
        ).drop("_iter", "_body", "_v"))
    return done, st


def _batches_plain(st: pl.DataFrame) -> pl.DataFrame:
    """Stats lines whose body is a plain item list: explode the items, pivot the known keys.

    Same values as `_batches_general` (first item of a column's keys wins, side-specific keys
    only on their side), without one regex per key per line or a list.eval per line.
    """
    st = st.with_row_index("_i")
    long = (
        st.select("_i", "kind", _it=pl.col("_body").str.split(", ")).explode("_it")
        .with_columns(pl.col("_it").str.split_exact(": ", 1).struct.rename_fields(["_k", "_v"])).unnest("_it")
    )
    col_of = {kind: _stats_columns(kind) for kind in ("prefill", "decode")}
    long = long.with_columns(
        _c=pl.when(pl.col("kind") == "prefill").then(pl.col("_k").replace_strict(col_of["prefill"], default=None))
        .otherwise(pl.col("_k").replace_strict(col_of["decode"], default=None)),
        _g=pl.col("_k").str.extract(r"^(cuda|cpu|npu|musa) graph$", 1),
        _known=pl.col("_k").is_in(KNOWN_STATS_KEYS),
    )
    wide = long.filter(pl.col("_c").is_not_null()).pivot(on="_c", index="_i", values="_v", aggregate_function="first")
    graph = long.filter(pl.col("_g").is_not_null()).group_by("_i").agg(graph_backend=pl.col("_g").first())
    extra_t = pl.List(pl.Struct({"key": pl.Utf8, "value": pl.Utf8}))
    extra = (long.filter(~pl.col("_known")).group_by("_i", maintain_order=True)
             .agg(extra=pl.struct(key=pl.col("_k"), value=pl.col("_v"))))
    st = st.join(wide, on="_i", how="left").join(graph, on="_i", how="left").join(extra, on="_i", how="left")
    cols = {}
    for col, keys, side, typ in STATS_KEYS:
        raw = pl.col(col).str.strip_chars() if col in wide.columns else pl.lit(None, dtype=pl.Utf8)
        cols[col] = _stats_value(raw, typ)
    return st.with_columns(
        **cols,
        extra=pl.col("extra").cast(extra_t).fill_null(pl.lit([], dtype=extra_t)),
        tail=pl.lit(None, dtype=pl.Utf8),
        truncated=pl.col("unterminated"),
    ).drop("_i", "_iter", "_body")


def _batches_general(st: pl.DataFrame) -> pl.DataFrame:
    # A cut line's last item may itself be cut (`#queue-req: 13` of 130): keep it as tail only.
    cut_last = pl.col("unterminated") & pl.col("_body").str.contains(", ")
    st = st.with_columns(
        _items=pl.when(cut_last).then(pl.col("_body").str.replace(r", [^,]*$", "")).otherwise(pl.col("_body")),
        _cut=pl.when(pl.col("unterminated")).then(
            pl.when(cut_last).then(pl.col("_body").str.extract(r", ([^,]*)$", 1)).otherwise(pl.col("_body"))),
    )
    st = st.with_columns(_items=pl.when(pl.col("unterminated") & ~cut_last).then(pl.lit("")).otherwise(pl.col("_items")))
    cols = {}
    for col, keys, side, typ in STATS_KEYS:
        alt = "|".join(re.escape(k) for k in keys)
        raw = pl.col("_items").str.extract(rf"(?:^|, )(?:{alt}): ([^,]*)", 1).str.strip_chars()
        v = _stats_value(raw, typ)
        if side is not None:
            v = pl.when(pl.col("kind") == side).then(v)
        cols[col] = v
    graph = pl.col("_items").str.extract(r"(?:^|, )(cuda|cpu|npu|musa) graph: ", 1)
    items = pl.col("_items").str.split(", ")
    known = pl.element().str.extract(r"^([^:]+): ", 1).is_in(KNOWN_STATS_KEYS)
    has_kv = pl.element().str.contains(": ")
    extra = items.list.eval(pl.element().filter(has_kv & ~known.fill_null(False)))
    tail_items = items.list.eval(pl.element().filter(~has_kv & (pl.element() != "")))
    st = st.with_columns(**cols, graph_backend=graph, _extra=extra, _tail=tail_items.list.join(", "))
    iter_entry = pl.when(pl.col("_iter").is_not_null()).then(pl.concat_list(pl.lit("iter: ") + pl.col("_iter")))
    st = st.with_columns(
        _extra=pl.when(iter_entry.is_not_null()).then(pl.concat_list(iter_entry, pl.col("_extra"))).otherwise(pl.col("_extra"))
    )
    st = st.with_columns(
        extra=pl.col("_extra").list.eval(
            pl.struct(key=pl.element().str.extract(r"^([^:]+): ", 1),
                      value=pl.element().str.extract(r"^[^:]+: (.*)$", 1))),
        tail=pl.concat_str(
            [pl.when(pl.col("_tail") != "").then(pl.col("_tail")), pl.col("_cut")], separator=", ", ignore_nulls=True),
        truncated=pl.col("unterminated"),
    )
    return st.with_columns(tail=pl.when(pl.col("tail") != "").then(pl.col("tail"))).drop(
        "_iter", "_body", "_items", "_cut", "_extra", "_tail")


def infer_role(text: str) -> str | None:
    """Role from content: PD prefill vs PD decode fields or failure lines (SGLANG.md §5, §9)."""
    # polars' regex engine counts the same matches as re.findall, in a quarter of the time (the
    # 4 MiB head of every log: 80 ms with `re`, before the first block is parsed)
    head = pl.Series([text])
    p = head.str.count_matches(ROLE_PREFILL).item()
    d = head.str.count_matches(ROLE_DECODE).item()
    if p or d:
        return "prefill" if p >= d else "decode"
    if re.search(r"Prefill batch[.,]", text) and re.search(r"Decode batch[.,]", text):
        return "unified"
    return None


def _guess_year(text: str) -> int | None:
    m = re.search(r"(?:^|[\[ ])(20[0-9]{2})-[0-9]{2}-[0-9]{2}[ T]", text, re.M)
    if m:
        return int(m.group(1))
    m = re.search(r"^\[(1[0-9]{9})\.[0-9]+\] ", text, re.M)  # UCX epoch seconds
    if m:
        import datetime as _dt

        return _dt.datetime.fromtimestamp(int(m.group(1)), _dt.timezone.utc).year
    return None


def sniff(head: bytes, path: str) -> float:
    text = head.decode("utf-8", "replace")
    hits = sum(1 for _ in re.finditer(r"\[(?:[0-9]{4}-)?[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}|^[IWEF][0-9]{4} [0-9][0-9]:|UCX +[A-Z]+ |NCCL (?:INFO|WARN)"
                                      r"|(?:Prefill|Decode) batch[.,]|Traceback \(most recent", text, re.M))
    if hits == 0:
        return 0.05 if text.strip() else 0.01  # fallback: any text file is a (messy) log
    return min(1.0, 0.5 + hits / 20)


def parse(source: Source, ctx: Context) -> Iterator[Batch]:
    # The head (for the year and the role) is read from its own stream: peeking a gzip stream
    # returns one buffer at most, and a cut one raises inside peek.
    with source.open() as head_stream:
        head_text = read_upto(head_stream, HEAD_BYTES).decode("utf-8", "replace")
    year = ctx.year or _guess_year(head_text)
    if year is None and source.mtime:
        import datetime as _dt

        year = _dt.datetime.fromtimestamp(source.mtime, _dt.timezone.utc).year
        ctx.notes.append(f"no dated line in the head: year {year} taken from the file date")
    year = year or 1970
    role = ctx.role or infer_role(head_text) or _role_from_name(source.path) or "unknown"
    ctx.inferred_role = role
    first_ts = last_ts = None
    with source.open() as stream:
        # Block size trades speed for memory: the native path reads up to three blocks per polars
        # pass (GROUP_BLOCKS), and a pass's frames are most of the peak. With two blocks a pass,
        # 16 MiB blocks were 8% faster than 12, but a 4.3 GB dump of four files (a prefill log the
        # heaviest) peaked at 0.92-1.0 GiB of RSS; 12 MiB: 0.74 GiB. A block also ends at
        # MAX_BLOCK_LINES lines, since the frames cost per line: 300 MB of 29-byte sglang lines
        # peaked at 3.3 GiB without it.
        blocks = lines.read_raw_blocks(stream, lines.BLOCK_BYTES, ctx.on_progress, CONTINUES, lines.MAX_BLOCK_LINES)
        for out in _parse_blocks(blocks, ctx, year, role, source.path):
            yield out
            for t in ("batches", "events"):
                if out[t].height:
                    lo, hi = out[t]["ts"].min(), out[t]["ts"].max()
                    first_ts = lo if first_ts is None or (lo is not None and lo < first_ts) else first_ts
                    last_ts = hi if last_ts is None or (hi is not None and hi > last_ts) else last_ts
    ctx.first_ts, ctx.last_ts = first_ts, last_ts


PARSE_THREADS = min(2, os.cpu_count() or 1)
# Blocks the native path reads in one pass (`_parse_raws`) when one file has the cores: each pass
# pays polars' fixed cost once. Two blocks against one: 1 GiB in 11.4 -> 10 s; three against two:
# -10% wall (8.8 -> 7.9 s), peak RSS 0.6 -> 0.8 GiB (a dump with 1 GiB prefill logs: 0.9); four:
# 1.25 GiB. A pass's frames cost per line more than per byte, so a pass also holds at most
# PASS_LINES lines: three blocks of PD log lines (a 12 MiB block of the bench's holds 45-56k), but
# two of lines under ~220 bytes, such as short lines, which a block holds MAX_BLOCK_LINES of (three
# of those peaked at 0.93 GiB). The polars path, which holds a whole block as text, keeps one
# block a pass (memory, issue 5).
GROUP_BLOCKS = 3
PASS_LINES = 170_000


def _parse_blocks(blocks, ctx: Context, year: int, role: str, path: str) -> Iterator[Batch]:
    """`_parse_block` over the blocks on PARSE_THREADS threads (polars releases the GIL), in order.

    One file then uses every core (issue 5). Each block gets its own copy of the context and the
    counts are merged in block order. The first block runs alone when it may teach the Kibana
    viewer offset (its text has the ` @ ` of a Kibana time), so what it learns reaches every later
    block as it did when blocks ran one after another; otherwise the cores start at once.
    """
    import collections
    import dataclasses
    from concurrent.futures import ThreadPoolExecutor

    def run(raws, bctx):
        return _parse_raws(raws, bctx, year, role, path), bctx

    def merge(fut):
        out, b = fut.result()
        ctx.account(parsed=b.parsed_lines, continuation=b.continuation_lines, unparsed=b.unparsed_lines)
        if ctx.outer_offset_s is None and b.outer_offset_s is not None:
            ctx.outer_offset_s = b.outer_offset_s
            ctx.notes.extend(b.notes)
        return out

    # In an ingest worker process (small inputs, or --jobs) the other workers have the other
    # cores: one block at a time, not grouped, keeps the whole tree's memory flat (issue 5).
    import multiprocessing

    worker = multiprocessing.parent_process() is not None
    threads = 1 if worker else PARSE_THREADS
    group = GROUP_BLOCKS if native.enabled() and not worker else 1
    with ThreadPoolExecutor(threads, thread_name_prefix="parse") as pool:
        queue: collections.deque = collections.deque()
        first = True
        for raws in _passes(blocks, group, PASS_LINES):
            alone = first and any(_mentions(r, b" @ ") for r in raws)
            first = False
            bctx = dataclasses.replace(ctx, lines=0, parsed_lines=0, continuation_lines=0, unparsed_lines=0, notes=[])
            queue.append(pool.submit(run, raws, bctx))
            if alone or len(queue) >= threads:
                yield merge(queue.popleft())
        while queue:
            yield merge(queue.popleft())


def _passes(blocks: Iterable[RawBlock], group: int, max_lines: int) -> Iterator[list[RawBlock]]:
    """The blocks in order, in runs of at most `group` blocks and `max_lines` lines (one block
    alone may have more lines)."""
    raws: list[RawBlock] = []
    n = 0
    for raw in blocks:
        if raws and n + raw.lines > max_lines:
            yield raws
            raws, n = [], 0
        raws.append(raw)
        n += raw.lines
        if len(raws) >= group:
            yield raws
            raws, n = [], 0
    if raws:
        yield raws


def _mentions(raw: RawBlock, needle: bytes) -> bool:
    """Whether the block's text has `needle`, without copying the block."""
    return re.search(re.escape(needle), raw.body) is not None


def _role_from_name(path: str) -> str | None:
    low = path.lower()
    if "prefill" in low:
        return "prefill"
    if "decode" in low:
        return "decode"
    return None


# A plain sglang stats line, bare or in a k8s CRI `F` record (SGLANG.md §3, §5): 70-90% of the
# lines of a PD log. It matches RE_SGLANG (not RE_SGLANG_CUSTOM, which needs `][`) with a message
# matching RE_STATS, so the full path would make it a `batches` row with exactly these fields.
RE_FAST_STATS = (
    r"^((?:([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})) (?:stdout|stderr) (F) ?)?"
    r"\[([0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{3}))?"
    r"((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)[0-9]+)*)\] (Prefill|Decode) batch(?: \[([0-9]+)\])?[.,] ?)"
)


def _fast_stats(df: pl.DataFrame, year: int, ctx: Context) -> pl.DataFrame:
    """The rows of `df` (with a `_fh` header struct) in the shape `_classify` gives a plain stats line."""
    h = lambda i: pl.col("_fh").struct.field(str(i))  # noqa: E731
    raw, local = _sglang_time(h(4), h(5), h(6), year)
    # the fields `_stats_lead` takes from the message; a batches row keeps no message
    return df.select(
        "line_no", "unterminated",
        kind=h(8).str.to_lowercase(), _iter=h(9),
        _body=pl.col("line").str.slice(h(1).str.len_chars()).str.strip_chars_end(" \t\r").str.strip_chars_end(", "),
        ts_raw=raw, ts=pl.coalesce(_outer_ts(h(2)), _local_to_utc(local, ctx.tz)),
        prefix=pl.concat_str(h(2), pl.lit(" "), h(3)), **_rank_cols(h(7)),
    )


# The native scanner's stats columns, in STATS_KEYS order, and every known raw key with its
# column on the prefill and on the decode side (-1: known, but no column on that side).
NATIVE_COLUMNS = [(col, typ) for col, _, _, typ in STATS_KEYS]


def _native_keys() -> list[tuple[str, int, int]]:
    index = {col: i for i, (col, _) in enumerate(NATIVE_COLUMNS)}
    sides = [_stats_columns("prefill"), _stats_columns("decode")]
    return [(k, *(index[m[k]] if k in m else -1 for m in sides)) for k in KNOWN_STATS_KEYS]


def _parse_raws(raws: list[RawBlock], ctx: Context, year: int, role: str, path: str) -> Batch:
    """Consecutive blocks, each read as it would be alone, in one pass.

    With the native scanner built, it splits the lines and reads the common ones whole: plain stats
    lines, the prefix of every other sglang line, canonical access lines and request logs. Polars
    does the rest, and all of a block with a k8s partial record. Its fixed cost (~0.2 ms a call,
    a hundred calls, whatever the rows) is paid once for all the blocks (issue 5); `_blk` keeps
    them apart where lines of a block affect each other (folding, rooms lent, the Kibana offset).
    It takes the blocks over: their text is dropped once scanned.
    """
    if not native.enabled():
        return _concat_batches([_parse_block(lines.frame(r), ctx, year, role, path) for r in raws])
    native.configure(_native_keys(), "".join(t[0] for _, t in NATIVE_COLUMNS))
    ds = [native.scan(r, year) for r in raws]
    if any(d["partial"] for d in ds):
        # a k8s partial record may swallow the line after it: the polars path decides its block
        return _concat_batches([_parse_block(lines.frame(r), ctx, year, role, path) if d["partial"]
                                else _parse_scanned([r], [d], ctx, year, role, path) for r, d in zip(raws, ds)])
    for r in raws:
        r.body = b""  # read: the text goes while the frames are built
    return _parse_scanned(raws, ds, ctx, year, role, path)


def _concat_batches(batches: list[Batch]) -> Batch:
    if len(batches) == 1:
        return batches[0]
    return {t: pl.concat([schema.conform(t, b[t]) for b in batches]) for t in batches[0]}


def _parse_scanned(raws: list[RawBlock], ds: list[dict], ctx: Context, year: int, role: str, path: str) -> Batch:
    """Blocks the scanner read (`ds`, none with a partial record) into their tables."""
    def each(frame):
        return pl.concat([frame(d, raw).with_columns(_blk=pl.lit(i, dtype=pl.Int32))
                          for i, (d, raw) in enumerate(zip(ds, raws))])

    nat = each(lambda d, raw: native.stats_frame(d, NATIVE_COLUMNS))
    nat = nat.with_columns(
        ts=pl.coalesce(_cri_ts(nat), _local_to_utc(pl.col("local"), ctx.tz)),
        prefix=pl.concat_str(pl.col("cri"), pl.lit(" F")),
        tail=pl.lit(None, dtype=pl.Utf8), truncated=pl.lit(False),
        host=pl.lit(ctx.host), role=pl.lit(role), source_file=pl.lit(path),
    )
    other = _regex_thread("lines", lambda: _classify(_join_partials(_strip_wrappers(each(native.rest_frame))), ctx, year))
    sg = each(lambda d, raw: lines.with_flags(native.sglang_frame(d), raw))
    del ds  # the scanner's buffers: the frames hold what they need
    sg = sg.with_columns(
        prefix=pl.concat_str(pl.col("cri"), pl.lit(" F")),
        partial=pl.when(pl.col("cri").is_not_null()).then(False),
        outer_ts=_cri_ts(sg),
        folded=pl.lit(0, dtype=pl.Int64),
        family=pl.lit("sglang"),
    ).with_columns(ts=pl.coalesce(pl.col("outer_ts"), _local_to_utc(pl.col("local"), ctx.tz)))
    # what _classify gives such a line: no level, glog file, peer or c10d rank (null columns); no
    # raw line either, which only unparsed rows keep
    sg = sg.select([pl.col(c) if c in sg.columns else pl.lit(None).alias(c) for c in other.columns]
                   + _NATIVE_EVENT_COLUMNS).cast(other.schema)
    other = other.with_columns(pl.lit(None, dtype=sg.schema[c]).alias(c) for c in _NATIVE_EVENT_COLUMNS)
    # An access or request line read whole is an event head with nothing to fold into it unless a
    # line the scanner left follows it (a traceback body): the others skip folding (issue 5).
    read = (sg["_acc_status"].is_not_null() | sg["_req_kind"].is_not_null()) & ~(sg["line_no"] + 1).is_in(
        other["line_no"].implode())
    # `sg` stays whole: the events merge gathers the rows read whole and drops the others in the
    # one gather that puts the events in line order (a filter first cost a gather of every row)
    classified = _merge_by_line([other, sg.filter(~read)])
    del other
    # a block's first line has no line above it: nothing folds across blocks
    classified = classified.with_columns(_brk=pl.col("_brk") | (pl.col("_blk") != pl.col("_blk").shift(1)))
    return _finish_block(classified, None, ctx, role, path, taken=nat, ready=sg.with_columns(_keep=read))


_ACCESS_COLUMNS = ["_acc_peer", "_acc_method", "_acc_path", "_acc_status"]
_REQUEST_COLUMNS = ["_req_kind", "_req_rid", "_req_finish", "_req_status", "_req_room", "_req_prompt", "_req_completion",
                    "_req_cached", "_req_e2e", "_req_rank"]
_NATIVE_EVENT_COLUMNS = _ACCESS_COLUMNS + _REQUEST_COLUMNS


def _ready_rows(ev: pl.DataFrame) -> pl.DataFrame:
    """What `_event_fields` gives the lines the native scanner read whole, in one pass.

    A canonical uvicorn access line (`INFO:     peer - "METHOD path proto" status`, `_acc_*`)
    has no rid, room, request field or rank in it; a request log line (`Receive: ...`,
    `Finish: ...`, `_req_*`) is ASCII, with its room as `bootstrap_room=N` and no peer address.
    """
    acc = pl.col("_acc_status").is_not_null()
    return ev.with_columns(
        kind=pl.when(acc).then(pl.lit("http_access")).when(pl.col("_req_kind") == 1).then(pl.lit("request_received"))
        .otherwise(pl.lit("request_finished")),
        severity=pl.lit("info"), source=pl.when(acc).then(pl.lit("uvicorn")).otherwise(pl.lit("request_log")),
        http_status=pl.coalesce("_acc_status", "_req_status").cast(pl.Int32), http_method=pl.col("_acc_method"),
        http_path=pl.col("_acc_path"), peer=pl.when(acc).then(pl.col("_acc_peer")).otherwise(pl.col("peer_host")),
        rid=pl.col("_req_rid"), bootstrap_room=pl.col("_req_room"), finish_reason=pl.col("_req_finish"),
        prompt_tokens=pl.col("_req_prompt"), completion_tokens=pl.col("_req_completion"),
        cached_tokens=pl.col("_req_cached"), e2e_latency=pl.col("_req_e2e"),
        tp_rank=pl.when(acc).then(pl.col("tp_rank"))
        .otherwise(pl.coalesce(pl.col("tp_rank"), pl.col("_req_rank").cast(pl.Int32), pl.col("c10_rank"))),
    ).drop(_NATIVE_EVENT_COLUMNS)


def _merge_by_line(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Frames of one schema, each in line order, as one in line order: no sort when only one has
    rows (`merge_sorted` measured slower than concat and sort).

    Rows with a false `_keep` (when the frames have that column) are left out in the same gather.
    """
    full = [f for f in frames if f.height]
    if "_keep" not in frames[0].columns:
        if len(full) <= 1:
            return full[0] if full else frames[0]
        return pl.concat(full).sort("line_no")
    both = pl.concat(full) if full else frames[0]
    keep = both["_keep"]
    order = both.select(pl.int_range(pl.len(), dtype=pl.UInt32).filter(keep).sort_by(pl.col("line_no").filter(keep)))
    return both.drop("_keep")[order.to_series()]


def _parse_block(df: pl.DataFrame, ctx: Context, year: int, role: str, path: str) -> Batch:
    # Plain stats lines skip wrapper stripping, classification and folding (issue 5). A k8s
    # partial record anywhere in the block may swallow the line after it: then no fast path.
    df = df.with_columns(_fh=pl.col("line").str.extract_groups(RE_FAST_STATS))
    fast_mask = df["_fh"].struct.field("1").is_not_null()
    fast = None
    if fast_mask.any():
        rest = _strip_wrappers(df.filter(~fast_mask).drop("_fh").with_columns(_brk=fast_mask.shift(1, fill_value=False)
                                                                             .filter(~fast_mask)))
        if rest["partial"].any():
            rest = None
        else:
            fast = _fast_stats(df.filter(fast_mask), year, ctx)
    if fast is None:
        rest = _strip_wrappers(df.drop("_fh"))
    return _parse_rest(rest, fast, ctx, year, role, path)


def _parse_rest(df: pl.DataFrame, fast: pl.DataFrame | None, ctx: Context, year: int, role: str, path: str) -> Batch:
    """The lines of a block that the fast path did not take (`fast`: the stats lines it took)."""
    return _finish_block(_classify(_join_partials(df), ctx, year), fast, ctx, role, path)


def _finish_block(df: pl.DataFrame, fast: pl.DataFrame | None, ctx: Context, role: str, path: str,
                  taken: pl.DataFrame | None = None, ready: pl.DataFrame | None = None) -> Batch:
    """Classified lines of a block into its tables; `fast` (raw fields) and `taken` (finished
    batches rows) are the stats lines the regex fast path and the native scanner took; `ready`
    the sglang lines the scanner read, where `_keep` marks the access and request lines read
    whole, each an event of its own (the other rows of `ready` are in `df`)."""
    # Nothing folds across blocks: blocks are cut before a record's head (parsers/lines.py), unless
    # its body runs over RECORD_BACKTRACK; such orphaned body lines land in unparsed with their numbers.
    df = _fold_continuations(df)
    is_stats = pl.col("family").is_not_null() & ~pl.col("_is_event")
    df = df.with_columns(
        _table=pl.when(pl.col("_cont")).then(pl.lit("cont"))
        .when(is_stats).then(pl.lit("batches"))
        .when(pl.col("family").is_not_null()).then(pl.lit("events"))
        .otherwise(pl.lit("unparsed")),
        host=pl.lit(ctx.host), role=pl.lit(role), source_file=pl.lit(path),
    )
    # traceback text and exception type per record
    conts = (
        df.filter(pl.col("_table") == "cont")
        .group_by("_grp", maintain_order=True)
        .agg(traceback=pl.col("body").str.join("\n"),
             exc_type=pl.col("body").filter(~pl.col("body").str.contains(r"^\s")).last().str.extract(RE_EXC_LINE, 1))
    )
    ev = df.filter(pl.col("_table") == "events").join(conts, on="_grp", how="left")
    if "_acc_status" in ev.columns:
        # access and request lines the native scanner read skip `_event_fields`; the rooms one
        # line lends another are then found over all of them
        read = ev["_acc_status"].is_not_null() | ev["_req_kind"].is_not_null()
        parts = [_event_fields(ev.filter(~read).drop(_NATIVE_EVENT_COLUMNS), ctx), _ready_rows(ev.filter(read))]
        if ready is not None and ready.height:
            parts.append(_ready_rows(ready).with_columns(host=pl.lit(ctx.host), role=pl.lit(role), source_file=pl.lit(path)))
        ready = None
        # the events columns, the block of each row while rooms are lent, and which rows to keep
        parts = [schema.conform("events", p.with_columns(truncated=pl.col("unterminated")))
                 .with_columns(p["_blk"], p["_keep"] if "_keep" in p.columns else pl.lit(True).alias("_keep"))
                 for p in parts]
        ev = _merge_by_line(parts)
        del parts
        ev = _event_rooms(ev).drop("_blk")
    else:
        ev = _events(ev, ctx).with_columns(truncated=pl.col("unterminated"))
    st = df.filter(pl.col("_table") == "batches")
    if taken is not None:
        # the scanner's rows are in line order; the few stats lines it left are merged in
        parts = [schema.conform("batches", taken)]
        if st.height:
            parts.append(schema.conform("batches", _batches(_stats_lead(st)).sort("line_no")))
        st = _merge_by_line(parts)
    else:
        st = _stats_lead(st)
        if fast is not None:
            fast = fast.with_columns(host=pl.lit(ctx.host), role=pl.lit(role), source_file=pl.lit(path))
            st = pl.concat([st.select(fast.columns), fast]).sort("line_no")
        st = _batches(st)
    un = df.filter(pl.col("_table") == "unparsed").with_columns(
        line=pl.col("line").str.slice(0, MAX_LINE_CHARS),
        reason=pl.when(pl.col("line").str.strip_chars() == "").then(pl.lit("blank"))
        .when(pl.col("unterminated") | (pl.col("last_line") & pl.col("body").str.contains(r"^(?:\[[0-9=-]|[IWEF][0-9]|\{)")))
        .then(pl.lit("truncated"))
        .when(pl.col("body").str.contains(RE_TB)).then(pl.lit("orphan_continuation"))
        .otherwise(pl.lit("unrecognised")),
        format=pl.lit(name),
    )
    n_cont = int((df["_table"] == "cont").sum()) + int(df["folded"].sum())
    ctx.account(parsed=ev.height + st.height, continuation=n_cont, unparsed=un.height)
    return {"events": ev, "batches": st, "unparsed": un}


samples = [
    Sample(
        "prefill_0410_pd_trailing_comma",
        "[2025-10-15 14:44:32 DP14 TP14 EP14] Prefill batch. #new-seq: 2, #new-token: 68, #cached-token: 0, "
        "token usage: 0.01, #unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 1, input throughput (token/s): 1326.00, \n",
        {"batches": [{"kind": "prefill", "dp_rank": 14, "tp_rank": 14, "ep_rank": 14, "new_token": 68,
                      "bootstrap_req": 0, "inflight_req": 1, "input_throughput": 1326.0, "running_req": None}]},
    ),
    Sample(
        "prefill_2024_cache_hit_rate",
        "[2024-11-29 10:28:29 TP0] Prefill batch. #new-seq: 2, #new-token: 2048, #cached-token: 888, "
        "cache hit rate: 0.00%, token usage: 0.11, #running-req: 69, #queue-req: 130\n",
        {"batches": [{"kind": "prefill", "cached_token": 888, "cache_hit_rate": 0.0, "queue_req": 130, "running_req": 69}]},
    ),
    Sample(
        "prefill_0515_bootstrap_req",
        "[2026-07-21 15:00:13 DP0 TP0 EP0] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 1024, "
        "token usage: 0.05, #running-req: 2, #queue-req: 1, #pending-token: 4096, #bootstrap-req: 3, #inflight-req: 5, "
        "cuda graph: False, input throughput (token/s): 15234.88\n",
        {"batches": [{"pending_token": 4096, "bootstrap_req": 3, "inflight_req": 5, "cuda_graph": False}]},
    ),
    Sample(
        "prefill_053_prealloc_is_bootstrap",
        "[2025-10-21 08:15:40 DP0 TP0 EP0] Prefill batch. #new-seq: 1, #new-token: 4096, #cached-token: 128, "
        "token usage: 0.03, #running-req: 0, #queue-req: 2, #prealloc-req: 1, #inflight-req: 4, \n",
        {"batches": [{"bootstrap_req": 1, "prealloc_req": None, "inflight_req": 4}]},
    ),
    Sample(
        "decode_pd_spec_kibana",
        "May 16, 2026 @ 20:44:55.560    [2026-05-16 12:44:55 DP2 TP2] Decode batch, #running-req: 1, #token: 31936, "
        "token usage: 0.22, accept len: 2.10, accept rate: 0.37, pre-allocated usage: 0.00, #prealloc-req: 0, "
        "#transfer-req: 0, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 0.39, #queue-req: 0    \n",
        {"batches": [{"kind": "decode", "dp_rank": 2, "num_token": 31936, "accept_len": 2.1, "accept_rate": 0.37,
                      "prealloc_req": 0, "transfer_req": 0, "gen_throughput": 0.39, "bootstrap_req": None,
                      "prefix": "May 16, 2026 @ 20:44:55.560", "ts_raw": "2026-05-16 12:44:55"}]},
    ),
    Sample(
        "decode_hybrid_swa_extra",
        "[2026-10-30 10:00:07.482 PP1 TP3] Decode batch, #running-req: 64, #full token: 120000, full token usage: 0.45, "
        "#swa token: 4000, swa token usage: 0.10, npu graph: True, gen throughput (token/s): 2450.12, #queue-req: 0\n",
        {"batches": [{"pp_rank": 1, "tp_rank": 3, "num_token": 120000, "token_usage": 0.45, "graph_backend": "npu",
                      "cuda_graph": True, "ts_raw": "2026-10-30 10:00:07.482"}]},
    ),
    Sample(
        "decode_transfer_failed_aborted",
        "[2025-11-05 16:39:09 TP2] Decode transfer failed for request rank=2 decode_req.req.rid='78fde411d57a4d7791b63963eac74968' "
        "decode_req.req.bootstrap_room=4793981895866140836 with exception KVTransferError(bootstrap_room=4793981895866140836): "
        "Aborted by AbortReq.\n",
        {"events": [{"kind": "transfer_failed", "tp_rank": 2, "rid": "78fde411d57a4d7791b63963eac74968",
                     "bootstrap_room": 4793981895866140836, "reason": "aborted", "severity": "error"}]},
    ),
    Sample(
        "decode_waiting_timeout",
        "[2026-10-30 10:01:12 DP2 TP2] Decode transfer failed for request rank=2 decode_req.req.rid='c3a81f0e6b2d4f57a9e0d1c2b3a49586' "
        "decode_req.req.bootstrap_room=6593551520068383758 with exception KVTransferError(bootstrap_room=6593551520068383758): "
        "Request 6593551520068383758 timed out after 300.0s in KVPoll.WaitingForInput\n",
        {"events": [{"kind": "transfer_failed", "reason": "waiting_timeout", "bootstrap_room": 6593551520068383758}]},
    ),
    Sample(
        "corruption_detected",
        "[2026-10-30 10:01:40 DP5 TP5] Context corruption detected: Request 0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b "
        "(bootstrap_room=1188402291734905512) received metadata from bootstrap_room=6593551520068383758. "
        "Metadata buffer index: 17. This indicates metadata buffer index collision.\n",
        {"events": [{"kind": "corruption_detected", "rid": "0b9e7d6c5a4f4e3d8c2b1a0f9e8d7c6b",
                     "bootstrap_room": 1188402291734905512, "dp_rank": 5}]},
    ),
    Sample(
        "request_finish_text",
        "[2026-10-30 10:00:14] Finish: obj=GenerateReqInput(rid='9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1', bootstrap_room=4793981895866140836), "
        "out={'text': 'Let me open', 'meta_info': {'id': '9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1', 'finish_reason': "
        "{'type': 'stop', 'matched': 1}, 'prompt_tokens': 8192, 'completion_tokens': 509, 'cached_tokens': 1024, "
        "'e2e_latency': 14.21}}\n",
        {"events": [{"kind": "request_finished", "source": "request_log", "finish_reason": "stop", "prompt_tokens": 8192,
                     "completion_tokens": 509, "e2e_latency": 14.21, "bootstrap_room": 4793981895866140836}]},
    ),
    Sample(
        "request_received_json",
        '[2026-10-30 10:00:00] {"timestamp": "2026-10-30T10:00:00.123456", "event": "request.received", '
        '"rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1", "obj": {"bootstrap_room": 4793981895866140836}}\n',
        {"events": [{"kind": "request_received", "rid": "9f1c2e0d4b7a4c18a2e5f6b3c8d9e0a1",
                     "bootstrap_room": 4793981895866140836}]},
    ),
    Sample(
        "uvicorn_access_k8s",
        "2026-01-14T05:32:17.632471128Z [2026-01-14 05:32:17] INFO:     29.163.184.147:33006 - "
        '"POST /v1/chat/completions HTTP/1.1" 200 OK\n',
        {"events": [{"kind": "http_access", "http_status": 200, "http_method": "POST",
                     "http_path": "/v1/chat/completions", "peer": "29.163.184.147:33006"}]},
    ),
    Sample(
        "traceback_folded",
        "[2026-01-14 05:32:17] Error in request: No tool calls but found tool output\n"
        "Traceback (most recent call last):\n"
        '  File "/x/serving_base.py", line 100, in handle_request\n'
        "    adapted_request = self._convert()\n"
        "ValueError: No tool calls but found tool output\n",
        {"events": [{"kind": "exception", "exc_type": "ValueError"}]},
    ),
    Sample(
        "nixl_glog",
        "E0801 15:40:05.041554    1049 nixl_agent.cpp:92] postXferReq: remote agent disconnected\n",
        {"events": [{"kind": "nixl_error", "source": "glog", "severity": "error"}]},
    ),
    Sample(
        "ucx_error",
        "[1784621081.896649] [prefill-pod:537  :1]       srd_iface.c:221  UCX  ERROR send completion[0] with error: "
        "Work Request Flushed Error\n",
        {"events": [{"kind": "ucx_error", "source": "ucx", "peer": "prefill-pod"}]},
    ),
    Sample(
        "c10d_timeout",
        "[rank1]:[W324 12:06:11.712424651 socket.cpp:497] [c10d] waitForInput: socket SocketImpl(fd=87) timed out after 600000ms\n",
        {"events": [{"kind": "collective_timeout", "source": "c10d", "tp_rank": 1, "ts_raw": "W324 12:06:11.712424651"}]},
    ),
    Sample(
        "bare_prefill_transfer_failed",
        "Unexpected transfer worker error for room 1788380104266545413\n",
        {"events": [{"kind": "transfer_failed", "bootstrap_room": 1788380104266545413, "ts": None}]},
    ),
    # NIXL connector lines (NIXL.md §10.3-§10.5, SGLANG.md §9.4-§9.6): each must land with its room
    Sample(
        "nixl_transfer_encountered_err",
        "[2026-07-21 08:06:26 DP3 TP3] Prefill transfer failed for request rank=3 req.rid='7d1c0c8f3a9e4f0a9b2d6c1e5f4a3b21' "
        "req.bootstrap_room=6593551520068383758 with exception NIXL transfer encountered ERR room=6593551520068383758\n"
        "NIXL transfer encountered ERR room=4127750395128840213\n",
        {"events": [{"kind": "transfer_failed", "bootstrap_room": 6593551520068383758, "reason": "transport"},
                    {"kind": "transfer_failed", "bootstrap_room": 4127750395128840213, "ts": None}]},
    ),
    Sample(
        "nixl_abort_notifications",
        "[2025-12-03 12:35:01 TP0] Received abort notification for room 4127750395128840213, marked as Failed\n"
        "[2025-12-03 12:35:01 TP0] Sent abort notification for room 6593551520068383758 to 10.0.0.2:17000\n",
        {"events": [{"kind": "abort", "bootstrap_room": 4127750395128840213, "reason": "aborted"},
                    {"kind": "abort", "bootstrap_room": 6593551520068383758, "peer": "10.0.0.2:17000"}]},
    ),
    Sample(
        "nixl_peer_register_disconnect_reconnect",
        "[2025-10-21 08:15:40 TP0] Register KVArgs from def7d2f1-d482-4cd2-b6de-f238da5a9c70 successfully\n"
        "[2026-08-14 09:12:44 DP0 TP0] NIXL peer def7d2f1-d482-4cd2-b6de-f238da5a9c70 disconnected; retiring its transfer batch\n"
        "[2026-08-14 09:12:47 DP0 TP0] Reconnected NIXL peer def7d2f1-d482-4cd2-b6de-f238da5a9c70\n",
        {"events": [{"kind": "peer_register"}, {"kind": "peer_disconnect"}, {"kind": "peer_reconnect"}]},
    ),
    Sample(
        "nixl_bootstrapped_debug",
        "[2025-10-21 08:15:41 TP0] got info room=4127750395128840213 agent_name='def7d2f1-d482-4cd2-b6de-f238da5a9c70' "
        "required_dst_info_num=1\n"
        "[2025-10-21 08:15:41 TP0] room=4127750395128840213 is bootstrapped\n",
        {"events": [{"kind": "bootstrapped", "bootstrap_room": 4127750395128840213},
                    {"kind": "bootstrapped", "bootstrap_room": 4127750395128840213}]},
    ),
    Sample(
        "nixl_notification_payloads_every_era",
        "[2025-04-30 14:24:01 TP0] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif 4127750395128840213_kv_0_0\n"
        "[2025-10-21 08:15:41 TP0] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif 4127750395128840213_kv_2_1_3\n"
        "[2025-10-21 08:15:41 TP0] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif 4127750395128840213_aux\n"
        "[2026-03-01 10:00:00 TP3] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif "
        "nixlv2_2_6593551520068383758_state_3_0\n"
        "[2026-03-01 10:00:00 TP3] sending kvcache to def7d2f1-d482-4cd2-b6de-f238da5a9c70 with notif "
        "6593551520068383758_kv_1_1_3_part_0_2\n",
        {"events": [{"kind": "transfer_notif", "bootstrap_room": 4127750395128840213},
                    {"kind": "transfer_notif", "bootstrap_room": 4127750395128840213},
                    {"kind": "transfer_notif", "bootstrap_room": 4127750395128840213},
                    {"kind": "transfer_notif", "bootstrap_room": 6593551520068383758},
                    {"kind": "transfer_notif", "bootstrap_room": 6593551520068383758}]},
    ),
    Sample(
        "nixl_python_binding_eras",
        "Backend UCX was instantiated\n"
        "Initialized NIXL agent: 1a960978-55e9-442c-8dbf-587836a91547\n"
        "2026-02-27 15:01:50 NIXL INFO    _api.py:212 Initialized NIXL agent: 8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7\n"
        "[2026-02-27 15:01:52 TP0] NIXL transport error for room 4127750395128840213: "
        "nixl._bindings.nixlRemoteDisconnectError: NIXL_ERR_REMOTE_DISCONNECT\n",
        {"events": [{"kind": "nixl_log"}, {"kind": "nixl_log"}, {"kind": "nixl"},
                    {"kind": "transfer_failed", "bootstrap_room": 4127750395128840213, "reason": "remote_disconnect"}]},
    ),
    Sample(
        "truncated_last_line",
        "[2026-03-17 17:35:07 DP9 TP9] Decode batch, #running-req: 12, #token: 768, token usage: 0.00, cuda graph: True, "
        "gen throughput (token/s): 3.83, #queue-req: 1",
        {"batches": [{"running_req": 12, "queue_req": None, "truncated": True, "tail": "#queue-req: 1"}]},
    ),
]
