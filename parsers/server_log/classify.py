"""Which family every line is, after its shipper's wrapper: time, rank tags, message; and which
unrecognised lines are traceback bodies of the record above (docs/formats/SGLANG.md,
"Classification order")."""

from __future__ import annotations

import re

import polars as pl

from forensics.core.schema import RANKS
from forensics.parsers.base import Context
from forensics.parsers.server_log.grammar import (
    DOCKER_JSON_LEAD,
    GLUED_HEAD_WORDS,
    JSON_BODY_LEAD,
    JSON_MESSAGE_PATHS,
    JSON_TRACING_LEVEL,
    JSON_TRACING_TARGETS,
    JSON_TRACING_TIME,
    PYSPY_HEAD,
    RE_AIOHTTP_ACCESS,
    RE_BARE_KNOWN,
    RE_C10D,
    RE_CRASH,
    RE_CRASH_BODY,
    RE_CRASH_OPEN,
    RE_CRI,
    RE_DOCKER_T,
    RE_DOTS,
    RE_DYNAMO,
    RE_EXC_LINE,
    RE_EXC_RAISED,
    RE_GLOG,
    RE_GLOG_LEAD,
    RE_GLOG_NOTICE,
    RE_GLOG_TIME,
    RE_GLUED,
    RE_GLUED_HEAD,
    RE_HEAD_TIME,
    RE_KIBANA,
    RE_NCCL,
    RE_PYSPY_PROCESS,
    RE_RAY,
    RE_RAY_REPEATED,
    RE_ROUTER,
    RE_SGLANG,
    RE_SGLANG_CUSTOM,
    RE_STAMPED_LEAD,
    RE_STATS,
    RE_STATS_ANYWHERE,
    RE_TB,
    RE_TB_CHAIN,
    RE_TB_OPEN,
    RE_TRTLLM,
    RE_TRTLLM_CPP,
    RE_UCX,
    RE_UVICORN_LEVEL,
    RE_UVICORN_LEVEL_WORD,
    RE_VLLM,
    TRTLLM_LEVEL,
    TRTLLM_RANK,
    VLLM_BODY,
    VLLM_DP,
    VLLM_TP,
)


def _alt(patterns: list[str]) -> pl.Expr:
    """First capture of the first pattern that matches `message`."""
    return pl.coalesce([pl.col("message").str.extract(p, 1) for p in patterns])


def _kind_expr(rules: list[tuple[str, str]], col: str, default=None) -> pl.Expr:
    expr = pl.lit(default, dtype=pl.Utf8)
    for kind, pat in reversed(rules):
        expr = pl.when(pl.col(col).str.contains(pat)).then(pl.lit(kind)).otherwise(expr)
    return expr


# Below this many rows a polars call costs more than its work: one
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

    Capturing a long tail costs the regex engine a pass over every byte of every matching line:
    match only the head, and take the tail as the rest of the string after it. Same fields, same
    values.
    """
    expr = pl.col(col) if isinstance(col, str) else col
    assert pattern.startswith("^") and pattern.endswith("(.*)$"), pattern
    n = re.compile(pattern).groups
    head = expr.str.extract_groups("^(" + pattern[1 : -len("(.*)$")] + ")")
    whole = head.struct.field("1")
    tail = pl.when(whole.is_not_null()).then(expr.str.slice(whole.str.len_chars()))
    return pl.struct(*[head.struct.field(str(i + 1)).alias(str(i)) for i in range(1, n)], tail.alias(str(n)))


def _with_groups(df: pl.DataFrame, col: str, gates: dict[str, pl.Expr], **patterns: str) -> pl.DataFrame:
    """`df` with a column `name` holding `_groups(col, pattern)` for each `name=pattern`.

    The `_groups` expression re-runs the head regex for each field it yields: here it runs once per
    pattern, into a column the fields are then taken from (same struct, same fields, same buffers).
    `gates[name]` is a cheap test every line the pattern matches passes: with no line passing,
    the fields are null without compiling the regex (polars keeps few compiled).
    """
    heads = {}
    for name, p in patterns.items():
        head = "^(" + p[1 : -len("(.*)$")] + ")"
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
        structs[name] = pl.struct(
            *[head.struct.field(str(i + 1)).alias(str(i)) for i in range(1, n)], tail.alias(str(n))
        )
    return df.with_columns(**structs).drop(*heads)


def _local_to_utc(expr: pl.Expr, tz: str) -> pl.Expr:
    return expr.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC")


def _sglang_time(date: pl.Expr, time: pl.Expr, ms: pl.Expr, year: int) -> tuple[pl.Expr, pl.Expr]:
    """(ts_raw, local datetime) of a sglang prefix: full date or MM-DD (year from context).

    docs/formats/SGLANG.md, "Time zones and dates".

    A time-only prefix (2024 builds) gets its ts_raw, the time as written, and no datetime here: its
    date comes from the lines around it (`passes.clock_pass`).
    """
    full = pl.when(date.str.len_chars() == 5).then(pl.lit(f"{year}-") + date).otherwise(date)
    clock = pl.concat_str(time, pl.when(ms.is_not_null()).then(pl.lit(".") + ms).otherwise(pl.lit("")))
    raw = pl.when(date.is_not_null()).then(pl.concat_str(date, pl.lit(" "), clock)).otherwise(clock)
    local = pl.concat_str(full, pl.lit(" "), time, pl.lit("."), ms.fill_null("000")).str.to_datetime(
        "%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us"
    )
    return raw, local


def _rank_cols(tags: pl.Expr) -> dict[str, pl.Expr]:
    # in ' DP0 TP0' the TP pattern must not match inside ATTN_CP / MOE_DP: anchor on the space; a
    # tag beyond Int32 (a garbled line) is null rather than the end of the ingest
    return {
        r: tags.str.extract(rf" {r.removesuffix('_rank').upper()}([0-9]+)", 1).cast(pl.Int32, strict=False)
        for r in RANKS
    }


def _outer_ts(text: pl.Expr) -> pl.Expr:
    """A shipper's ISO-8601 time (CRI, docker), to UTC."""
    return (
        text.str.replace(r"Z$", "+00:00")
        .str.replace(r"([+-][0-9]{2})([0-9]{2})$", "$1:$2")
        .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us", time_zone="UTC")
    )


def _cri_ts(df: pl.DataFrame) -> pl.Expr:
    """`_outer_ts` of the `cri` column: its two regex replaces cost as much on a column of nulls."""
    if df["cri"].null_count() == df.height:
        return pl.lit(None, dtype=pl.Datetime("us", "UTC"))
    return _outer_ts(pl.col("cri"))


def _strip_wrappers(df: pl.DataFrame) -> pl.DataFrame:
    """Split the shipper wrapper off every line: body, prefix, outer_ts (absolute, UTC) or None.

    docs/formats/SGLANG.md, "Shipper and launcher wrappers".
    """
    line = pl.col("line")
    is_json = line.str.starts_with(DOCKER_JSON_LEAD)
    iso = line.str.slice(4, 1) == "-"  # `\d{4}-` starts both shippers' times
    gates = {
        "_cri": iso & line.str.contains("std", literal=True),
        "_dock": iso,
        "_kib": line.str.contains(" @ ", literal=True),
    }
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
        pl.when(pl.col("_json_log").is_not_null())
        .then(pl.concat_str(pl.lit("docker-json "), pl.col("_json_time")))
        .when(pl.col("_cri").struct.field("3").is_not_null())
        .then(pl.concat_str(pl.col("_cri").struct.field("1"), pl.lit(" "), pl.col("_cri").struct.field("2")))
        .when(pl.col("_dock").struct.field("2").is_not_null())
        .then(pl.col("_dock").struct.field("1"))
        .when(pl.col("_kib").struct.field("2").is_not_null())
        .then(pl.col("_kib").struct.field("1"))
    )
    is_body = line.str.starts_with(JSON_BODY_LEAD) & ~is_json
    if df.select(is_body.any()).item():
        body, prefix = _json_message(body, prefix, is_body)
    df = df.with_columns(
        body=body.str.strip_chars_end(" \t\r"),
        prefix=prefix,
        partial=pl.col("_cri").struct.field("2") == "P",
        kibana_ts=pl.col("_kib")
        .struct.field("1")
        .str.to_datetime("%b %d, %Y @ %H:%M:%S%.f", strict=False, time_unit="us"),
        outer_ts=_outer_ts(outer_text),
    ).drop("_json_log", "_json_time", "_cri", "_dock", "_kib")
    df = _strip_leaders(df)
    if not df.select(pl.col("body").str.slice(1).str.contains("[", literal=True).any()).item():
        return _strip_glued_heads(df)  # nothing can be glued in front of a `[...]` prefix
    glued = pl.col("body").str.extract_groups(RE_GLUED)
    is_glued = (
        ~pl.col("body").str.contains(r"^(?:\[[0-9]|[IWEF][0-9]{4} |\[rank[0-9])")
        & glued.struct.field("2").is_not_null()
    )
    df = df.with_columns(
        prefix=pl.when(is_glued)
        .then(pl.concat_str(pl.col("prefix").fill_null(""), glued.struct.field("1")))
        .otherwise(pl.col("prefix")),
        body=pl.when(is_glued).then(glued.struct.field("2")).otherwise(pl.col("body")),
    )
    return _strip_glued_heads(_strip_stamped_lead(df))


def _strip_glued_heads(df: pl.DataFrame) -> pl.DataFrame:
    """A crash head or glog line another writer's unfinished line ran into (RE_GLUED_HEAD): the
    head starts the body, the other writer's text goes to `_glued` (`prefix` once classified, so
    that it lends the line no time)."""
    body = pl.col("body")
    none = pl.lit(None, dtype=pl.Utf8).alias("_glued")
    # a line with a log prefix of its own (SGLang's, UCX's or c10d's bracket, a glog head) is that
    # log's line, whatever its message quotes. Each test runs on the rows the one before left: a
    # regex costs as much on a null row as on the line
    rows = df.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("i"), body).filter(~body.str.starts_with("["))
    rows = rows.filter(~body.str.contains(RE_GLOG_LEAD))
    rows = rows.filter(body.str.contains_any(list(GLUED_HEAD_WORDS)) | body.str.contains(RE_GLOG_TIME))
    if rows.height:
        rows = rows.select("i", g=body.str.extract_groups(RE_GLUED_HEAD)).filter(
            pl.col("g").struct.field("2").is_not_null()
        )
    if not rows.height:
        return df.with_columns(none)
    at, g = rows["i"], rows["g"].struct
    return df.with_columns(
        _glued=pl.repeat(None, df.height, dtype=pl.Utf8, eager=True).scatter(at, g.field("1")),
        body=df["body"].scatter(at, g.field("2")),
    )


def _json_message(body: pl.Expr, prefix: pl.Expr, gate: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """A JSON line's server message (the first of JSON_MESSAGE_PATHS it holds) as its body; the JSON
    around it, the message elided, as its prefix. Lines without one keep `body` and `prefix`."""
    line = pl.col("line")
    found = pl.coalesce(pl.when(gate).then(line.str.json_path_match(p)) for p in JSON_MESSAGE_PATHS)
    found = pl.when(found.str.strip_chars() != "").then(found)
    # the message as the JSON holds it, to cut out of the prefix; an escape written otherwise
    # (`\u00e9`, `\/`) leaves the line whole, which still holds the message
    quoted = pl.struct(m=found).struct.json_encode().str.slice(5).str.strip_suffix("}")
    # one line is one event: a message's own line breaks would end it early
    message = found.str.replace_all(r"\r?\n", " ")
    # a tracing record (Dynamo's JSON Lines): the compact line it stands for, which its family reads
    time = pl.when(gate).then(line.str.json_path_match(JSON_TRACING_TIME))
    level = pl.when(gate).then(line.str.json_path_match(JSON_TRACING_LEVEL)).str.to_uppercase()
    *log_targets, target = (pl.when(gate).then(line.str.json_path_match(p)) for p in JSON_TRACING_TARGETS)
    target = pl.when(target == "log").then(pl.coalesce(log_targets)).otherwise(target)
    compact = pl.concat_str(time, pl.lit(" "), level, pl.lit(" "), target, pl.lit(": "), message)
    message = pl.coalesce(compact, message)
    return (
        pl.when(found.is_not_null()).then(message).otherwise(body),
        pl.when(found.is_not_null()).then(line.str.replace(quoted, '"…"', literal=True)).otherwise(prefix),
    )


def _strip_stamped_lead(df: pl.DataFrame) -> pl.DataFrame:
    """A launcher's bracketed stamp before SGLang's own (RE_STAMPED_LEAD) into `prefix`: SGLang's
    stamp, the later in the line, dates it (issue 42)."""
    body = pl.col("body")
    maybe = body.str.starts_with("[") & (body.str.contains("] [", literal=True) | body.str.contains("][", literal=True))
    if not df.select(maybe.any()).item():
        return df
    lead = pl.when(maybe).then(body).str.extract_groups(RE_STAMPED_LEAD)
    took = lead.struct.field("2").is_not_null()
    return df.with_columns(
        prefix=pl.when(took)
        .then(pl.concat_str(pl.col("prefix"), lead.struct.field("1"), separator=" ", ignore_nulls=True))
        .otherwise(pl.col("prefix")),
        body=pl.when(took).then(lead.struct.field("2")).otherwise(body),
    )


def _strip_leaders(df: pl.DataFrame) -> pl.DataFrame:
    """A Ray actor's `(Name pid=N) ` or unittest dots in front of a body, into `prefix` (after the
    shipper's prefix, if any)."""
    first = pl.col("body").str.slice(0, 1)
    if not df.select(first.is_in(["(", "."]).any()).item():
        return df
    ray = pl.when(first == "(").then(pl.col("body")).str.extract_groups(RE_RAY)
    dots = pl.when(first == ".").then(pl.col("body")).str.extract_groups(RE_DOTS)
    repeated = ray.struct.field("2").str.extract(RE_RAY_REPEATED, 1)
    ray_lead = pl.when(ray.struct.field("1").is_not_null()).then(
        pl.concat_str(ray.struct.field("1"), repeated, separator=" ", ignore_nulls=True)
    )
    lead = pl.coalesce(ray_lead, dots.struct.field("1"))
    return df.with_columns(
        prefix=pl.when(lead.is_not_null())
        .then(pl.concat_str(pl.col("prefix"), lead, separator=" ", ignore_nulls=True))
        .otherwise(pl.col("prefix")),
        body=pl.coalesce(
            ray.struct.field("2").str.replace(RE_RAY_REPEATED, ""), dots.struct.field("2"), pl.col("body")
        ),
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
    gates = {
        "_sg": body.str.starts_with("["),
        "_cu": body.str.contains("][", literal=True),
        "_gl": body.str.slice(0, 1).is_in(["I", "W", "E", "F"]),
        "_ux": body.str.contains("UCX", literal=True),
        "_c10": body.str.starts_with("[rank"),
        "_nc": body.str.contains(" NCCL ", literal=True),
        "_rt": (body.str.slice(4, 1) == "-") & body.str.contains(" [A-Z]{4,5} +[A-Za-z_]"),
        "_vl": body.str.slice(0, 1).is_in(["D", "I", "W", "E", "C"]) & body.str.contains("] ", literal=True),
        "_tr": body.str.contains("[TRT-LLM]", literal=True),
        "_tc": body.str.starts_with("[TensorRT-LLM]["),
        "_dy": body.str.contains(": ", literal=True)
        & body.str.contains(r"^ *(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T\S+ +)?[A-Z]{4,5} "),
    }
    df = _with_groups(
        df,
        "body",
        gates,
        _sg=RE_SGLANG,
        _cu=RE_SGLANG_CUSTOM,
        _gl=RE_GLOG,
        _ux=RE_UCX,
        _c10=RE_C10D,
        _nc=RE_NCCL,
        _rt=RE_ROUTER,
        _vl=RE_VLLM,
        _tr=RE_TRTLLM,
        _tc=RE_TRTLLM_CPP,
        _dy=RE_DYNAMO,
    )
    f = lambda s, i: pl.col(s).struct.field(str(i))  # noqa: E731
    # a when-chain runs every branch on every row: the two regexes below only on the lines no
    # sglang prefix decides (null never takes a branch)
    undecided = pl.when(f("_cu", 5).is_null() & f("_sg", 5).is_null()).then(body)
    family = (
        pl.when(f("_cu", 5).is_not_null())
        .then(pl.lit("sglang"))
        .when(f("_sg", 5).is_not_null())
        .then(pl.lit("sglang"))
        .when(undecided.str.contains(RE_GLOG_NOTICE))
        .then(pl.lit("glog"))
        .when(undecided.str.contains(RE_UVICORN_LEVEL))
        .then(pl.lit("uvicorn"))
        .when(f("_gl", 8).is_not_null())
        .then(pl.lit("glog"))
        .when(f("_ux", 8).is_not_null())
        .then(pl.lit("ucx"))
        .when(f("_c10", 9).is_not_null())
        .then(pl.lit("c10d"))
        .when(f("_nc", 6).is_not_null())
        .then(pl.lit("nccl"))
        .when(f("_rt", 8).is_not_null())
        .then(pl.lit("router"))
        .when(f("_vl", 6).is_not_null())
        .then(pl.lit("vllm"))
        .when(pl.coalesce(f("_tr", 4), f("_tc", 2)).is_not_null())
        .then(pl.lit("trtllm"))
        .when(f("_dy", 5).is_not_null())
        .then(pl.lit("dynamo"))
        .when(undecided.str.contains(RE_CRASH))
        .then(pl.lit("crash"))
        .when(undecided.str.contains(RE_AIOHTTP_ACCESS))
        .then(pl.lit("aiohttp"))
        .when(undecided.str.contains(RE_BARE_KNOWN))
        .then(pl.lit("bare"))
    )
    # the custom-config shape also matches the plain prefix, so it is tried first
    message = pl.coalesce(
        f("_cu", 5),
        f("_sg", 5),
        f("_gl", 8),
        f("_ux", 8),
        f("_c10", 9),
        f("_nc", 6),
        f("_rt", 8),
        f("_vl", 6),
        f("_tr", 4),
        f("_tc", 2),
        f("_dy", 5),
        body,
    )
    sg_raw, sg_local = _sglang_time(
        pl.coalesce(f("_cu", 1), f("_sg", 1)),
        pl.coalesce(f("_cu", 2), f("_sg", 2)),
        pl.coalesce(f("_cu", 3), f("_sg", 3)),
        year,
    )
    gl_raw = pl.concat_str(f("_gl", 1), f("_gl", 2), f("_gl", 3), pl.lit(" "), f("_gl", 4))
    gl_local = pl.concat_str(
        pl.lit(f"{year}-"), f("_gl", 2), pl.lit("-"), f("_gl", 3), pl.lit(" "), f("_gl", 4)
    ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    c10_raw = pl.concat_str(
        f("_c10", 2), f("_c10", 3), f("_c10", 4), pl.lit(" "), f("_c10", 5), pl.lit("."), f("_c10", 6)
    )
    c10_local = pl.concat_str(
        pl.lit(f"{year}-"),
        f("_c10", 3).str.zfill(2),
        pl.lit("-"),
        f("_c10", 4),
        pl.lit(" "),
        f("_c10", 5),
        pl.lit("."),
        f("_c10", 6).str.slice(0, 6),
    ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    ux_ts = (f("_ux", 1).cast(pl.Float64, strict=False) * 1e6).round().cast(pl.Int64).cast(pl.Datetime("us", "UTC"))
    # an aiohttp access line on its own carries its time with its offset: `[26/Jun/2025:02:04:08 +0000]`
    clf_raw = pl.when(undecided.str.contains(RE_AIOHTTP_ACCESS)).then(body).str.extract(r"\[([^\]]+)\]", 1)
    clf_ts = clf_raw.str.to_datetime("%d/%b/%Y:%H:%M:%S %z", strict=False, time_unit="us", time_zone="UTC")
    rt_raw = pl.concat_str(f("_rt", 1), pl.lit(" "), f("_rt", 2))
    rt_local = rt_raw.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    vl_raw = pl.concat_str(f("_vl", 2), pl.lit(" "), f("_vl", 3))
    vl_local = pl.concat_str(pl.lit(f"{year}-"), vl_raw).str.to_datetime(
        "%Y-%m-%d %H:%M:%S", strict=False, time_unit="us"
    )
    tr_raw = pl.concat_str(f("_tr", 1), pl.lit("-"), f("_tr", 2))
    tr_local = tr_raw.str.to_datetime("%m/%d/%Y-%H:%M:%S", strict=False, time_unit="us")
    tr_tags = f("_tr", 3)
    # Dynamo prints UTC with its zone; the stamp a wrapper took off is `outer_ts` already
    dy_ts = _outer_ts(f("_dy", 1))
    local = pl.coalesce(sg_local, gl_local, c10_local, rt_local, vl_local, tr_local)
    rank_cols = _rank_cols(f("_sg", 4))
    level = (
        pl.when(f("_cu", 4).is_not_null())
        .then(f("_cu", 4))
        .when(f("_gl", 1).is_not_null())
        .then(f("_gl", 1))
        .when(f("_ux", 7).is_not_null())
        .then(f("_ux", 7))
        .when(f("_c10", 2).is_not_null())
        .then(f("_c10", 2))
        .when(f("_nc", 5).is_not_null())
        .then(f("_nc", 5))
        .when(f("_rt", 3).is_not_null())
        .then(f("_rt", 3))
        .when(f("_vl", 1).is_not_null())
        .then(f("_vl", 1))
        .when(tr_tags.is_not_null())
        .then(tr_tags.str.extract(TRTLLM_LEVEL, 1))
        .when(f("_tc", 1).is_not_null())
        .then(f("_tc", 1))
        .when(f("_dy", 2).is_not_null())
        .then(f("_dy", 2))
    )
    df = df.with_columns(
        family=family,
        message=message,
        ts_raw=pl.coalesce(
            sg_raw,
            gl_raw,
            f("_ux", 1),
            c10_raw,
            rt_raw,
            vl_raw,
            tr_raw,
            f("_dy", 1),
            clf_raw,
            pl.col("prefix").str.extract(r"^(\S+)", 1),
        ),
        _local=local,
        _ux_ts=pl.coalesce(ux_ts, clf_ts, dy_ts),
        level=level,
        glog_file=pl.coalesce(f("_gl", 6), f("_ux", 5), f("_c10", 7), f("_rt", 6), f("_vl", 4)),
        # vLLM's head (level, time, file:line) after its process prefix: the lines of one record share it
        _vl_head=pl.when(f("_vl", 6).is_not_null()).then(
            pl.concat_str(
                pl.col("prefix").fill_null(""), body.str.slice(0, body.str.len_chars() - f("_vl", 6).str.len_chars())
            )
        ),
        # the router's spans, `http_request{method=POST uri=/v1/completions request_id="cmpl-1"}: `: its request's id
        span=f("_rt", 4),
        peer_host=pl.coalesce(f("_ux", 2), f("_nc", 1)),
        c10_rank=pl.coalesce(f("_c10", 1), tr_tags.str.extract(TRTLLM_RANK, 1)).cast(pl.Int32, strict=False),
        **rank_cols,
    ).drop("_sg", "_cu", "_gl", "_ux", "_c10", "_nc", "_rt", "_vl", "_tr", "_tc", "_dy")
    df = df.with_columns(
        prefix=pl.when(pl.col("_glued").is_not_null())
        .then(pl.concat_str(pl.col("prefix"), pl.col("_glued"), separator=" ", ignore_nulls=True))
        .otherwise(pl.col("prefix"))
    ).drop("_glued")
    df = _vllm_bodies(df)
    df = _stats_anywhere(df)
    # Kibana's outer clock is the viewer's zone: learn its offset to the inner clock from lines
    # that carry both (rounded to 15 min, docs/formats/SGLANG.md, "Time zones and dates"), and use
    # it for lines that carry only it.
    # Several blocks (`_blk`): learnt from the first block that teaches it, for it and those after,
    # as when the blocks are read one after another.
    known = pl.lit(ctx.outer_offset_s is not None)
    if ctx.outer_offset_s is None and df["kibana_ts"].is_not_null().any():
        blocks = (
            df.filter(pl.col("kibana_ts").is_not_null())["_blk"].unique().sort() if "_blk" in df.columns else [None]
        )
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
    return df.with_columns(ts=pl.coalesce(pl.col("outer_ts"), _local_to_utc(local_all, ctx.tz), pl.col("_ux_ts"))).drop(
        "_local", "_ux_ts"
    )


def _vllm_bodies(df: pl.DataFrame) -> pl.DataFrame:
    """The lines after a vLLM record's first, which carry its head again (its formatter repeats it on
    every line of a multi-line message), are body lines: a traceback's frames and exception line are
    folded into the record as an SGLang traceback is (`_fold_continuations`), not events of their own.
    The head's text goes to `prefix`."""
    head = pl.col("_vl_head")
    if df["_vl_head"].null_count() == df.height:
        return df.drop("_vl_head")
    same = head == head.shift(1)
    body = same & pl.col("message").str.contains(VLLM_BODY)
    # an exception line whose type names no Error (`zmq.error.Again: ...`) ends the body above it
    body = body | (same & body.shift(1) & pl.col("message").str.contains(r"^[A-Za-z_][\w.]*(?::\s|$)"))
    proc = pl.when(head.is_not_null()).then(pl.col("prefix"))
    tp = proc.str.extract_groups(VLLM_TP)
    return df.with_columns(
        family=pl.when(body).then(None).otherwise(pl.col("family")),
        body=pl.when(body).then(pl.col("message")).otherwise(pl.col("body")),
        prefix=pl.when(body).then(head.str.strip_chars_end()).otherwise(pl.col("prefix")),
        tp_rank=pl.coalesce(
            "tp_rank", pl.coalesce(tp.struct.field("1"), tp.struct.field("2")).cast(pl.Int32, strict=False)
        ),
        dp_rank=pl.coalesce("dp_rank", proc.str.extract(VLLM_DP, 1).cast(pl.Int32, strict=False)),
    ).drop("_vl_head")


def _stats_anywhere(df: pl.DataFrame) -> pl.DataFrame:
    """A stats line behind a head no wrapper or family knows (RE_STATS_ANYWHERE): the head goes to
    `prefix`, its date and time (if any) give the line's time, the rest is a bare stats line."""
    lone = pl.col("family").is_null() & pl.col("body").str.contains(" batch", literal=True)
    if not df.select(lone.any()).item():
        return df
    m = pl.when(lone).then(pl.col("body")).str.extract_groups(RE_STATS_ANYWHERE)
    head, rest = m.struct.field("1"), m.struct.field("2")
    t = head.str.extract_groups(RE_HEAD_TIME)
    raw = pl.concat_str(
        t.struct.field("1"),
        pl.lit(" "),
        t.struct.field("2"),
        pl.when(t.struct.field("3").is_not_null()).then(pl.lit(".") + t.struct.field("3")).otherwise(pl.lit("")),
    )
    local = pl.concat_str(
        t.struct.field("1"), pl.lit(" "), t.struct.field("2"), pl.lit("."), t.struct.field("3").fill_null("000")
    ).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
    took = rest.is_not_null()
    return df.with_columns(
        family=pl.when(took).then(pl.lit("bare")).otherwise(pl.col("family")),
        message=pl.when(took).then(rest).otherwise(pl.col("message")),
        prefix=pl.when(took)
        .then(pl.concat_str(pl.col("prefix"), head, separator=" ", ignore_nulls=True))
        .otherwise(pl.col("prefix")),
        ts_raw=pl.when(took).then(raw).otherwise(pl.col("ts_raw")),
        _local=pl.when(took).then(local).otherwise(pl.col("_local")),
    )


def _fold_continuations(df: pl.DataFrame) -> pl.DataFrame:
    """Decide which unrecognised lines are traceback bodies and attach them to their record.

    Adds `_cont` (a body line of the record above), `_is_event` (an event head), `_grp` (the
    record a line belongs to: a run of lines from its head) and `_head_ok` (the head is an event).
    """
    body = pl.col("body")
    # `_brk`: the line right above was a stats line taken out by the fast path (`_parse_block`).
    # A stats line is a non-event head: it starts a group and is never indented.
    brk = pl.col("_brk") if "_brk" in df.columns else pl.lit(False)
    # The body regexes run only where they decide something: on the lines with no
    # family, a few among tens of thousands, and on the line above each (its indentation).
    lone = pl.col("family").is_null()
    indented = pl.when(lone.shift(-1, fill_value=False)).then(body).str.contains(r"^\s+\S").fill_null(False)
    lone_body = pl.when(lone).then(body)
    # a chained traceback puts a blank line before and after "During handling of the above
    # exception..." (or "The above exception was the direct cause..."): those blank lines are
    # part of it. `_brk` says whether the row above is the line above.
    chain = lone_body.str.contains(RE_TB_CHAIN).fill_null(False)
    brk_below = pl.col("_brk").shift(-1, fill_value=False) if "_brk" in df.columns else pl.lit(False)
    blank_in_chain = (
        lone
        & (body == "")
        & ((chain.shift(1, fill_value=False) & ~brk) | (chain.shift(-1, fill_value=False) & ~brk_below))
    )
    # faulthandler puts a blank line before each `Thread 0x...` block and the module list; a dump
    # copied through some terminals and pastes has one after every line: inside a crash's run, a
    # blank line (or a run of them) before a frame belongs to the dump too
    after_blanks = pl.when(body != "").then(lone_body).shift(-1).backward_fill()
    in_crash = pl.when(~lone | brk).then(pl.col("family").fill_null("")).forward_fill() == "crash"
    blank_in_dump = (
        lone
        & (body == "")
        & ~brk_below
        & (
            after_blanks.str.contains(RE_CRASH_BODY).fill_null(False)
            | (in_crash & after_blanks.str.contains(r"^\s+\S").fill_null(False))
        )
    )
    # an excerpt may begin with a traceback's last line alone (`...KVTransferError: KVTransferError(...)`)
    at_start = (pl.int_range(pl.len()) == 0) & (pl.col("line_no") == 1) & (body != "")
    tb_like = (
        (
            lone_body.str.contains(RE_TB)
            | (lone_body.str.contains(RE_EXC_LINE) & ((indented.shift(1, fill_value=False) & ~brk) | at_start))
        )
        | blank_in_chain
        | blank_in_dump
    )
    df = df.with_columns(
        _cont=lone & tb_like,
        _is_event=pl.col("family").is_not_null() & ~pl.col("message").str.contains(RE_STATS),
    )
    # A dump's frame banner (`==== backtrace (tid: N) ====`, `Thread 0x... (most recent call
    # first):`) continues a crash head above it; under any other record it is a crash of its own
    # whose head is missing. The head's family is carried down its run ("" for none).
    # Only the first banner under such a head opens: a dump's later thread sections are the same
    # dump. Every py-spy `Process <pid>:` is a process of its own, except the one SGLang's
    # `Pyspy dump for PID <pid>:` line announces.
    banner = pl.col("_cont") & lone_body.str.contains(RE_CRASH_OPEN).fill_null(False)
    if df.select(banner.any()).item():  # most blocks have none: the heads are carried only then
        first = pl.int_range(pl.len()) == 0
        is_head = ~pl.col("_cont") | brk | first
        head_fam = pl.when(is_head).then(pl.col("family").fill_null("")).forward_fill()
        head_hang = pl.when(is_head).then(pl.col("message").str.contains(f"^{PYSPY_HEAD}").fill_null(False))
        head_hang = head_hang.forward_fill()
        first_banner = banner.cast(pl.Int32).cum_sum().over(is_head.cum_sum()) == 1
        process = lone_body.str.contains(RE_PYSPY_PROCESS).fill_null(False)
        crash_opens = banner & (
            (first_banner & (head_fam != "crash") & ~head_hang) | (process & ~(first_banner & head_hang))
        )
        df = (
            df.with_columns(_co=crash_opens)
            .with_columns(
                family=pl.when("_co").then(pl.lit("crash")).otherwise(pl.col("family")),
                message=pl.when("_co").then(body).otherwise(pl.col("message")),
                _cont=pl.col("_cont") & ~pl.col("_co"),
                _is_event=pl.col("_is_event") | pl.col("_co"),
            )
            .drop("_co")
        )
    start = ~pl.col("_cont") | brk
    grp = start.cast(pl.Int64).cum_sum()
    # a record is a run of lines: its head's value, carried down the run (no group-by)
    head_ok = pl.when(start | (pl.int_range(pl.len()) == 0)).then(pl.col("_is_event")).forward_fill()
    df = df.with_columns(_grp=grp, _head_ok=head_ok)
    # A traceback with no event above it (file start, or after a stats line) opens its own record,
    # and so does the tail of one an excerpt begins in (its frames, `^^^^` markers, before any head)
    # when the tail says what was raised: frames alone show no exception (`_tail_raises`).
    opens = (
        pl.col("_cont")
        & ~pl.col("_head_ok")
        & (body.str.contains(RE_TB_OPEN) | ((pl.int_range(pl.len()) == 0) & (pl.col("line_no") == 1) & _tail_raises()))
    )
    df = df.with_columns(
        family=pl.when(opens).then(pl.lit("python")).otherwise(pl.col("family")),
        _cont=pl.col("_cont") & ~opens,
        _is_event=pl.col("_is_event") | opens,
    )
    df = df.with_columns(_grp=grp, _head_ok=head_ok)
    # body lines under a non-event head stay unparsed (they keep their own line numbers)
    return df.with_columns(_cont=pl.col("_cont") & pl.col("_head_ok"))


def _tail_raises() -> pl.Expr:
    """Whether the run of body lines a block begins with holds the line naming what was raised
    (RE_EXC_RAISED, unindented): a lone `  File "..."` frame is no exception a reader can see."""
    grp = pl.col("_grp").fill_null(0)  # a block's first `_brk` may be null, and its group with it
    first_run = grp == grp.first()
    return pl.when(first_run & pl.col("_cont")).then(pl.col("body")).str.contains(RE_EXC_RAISED).fill_null(False).any()


def _uvicorn_level(msg: pl.Expr) -> pl.Expr:
    """Group 1 of RE_UVICORN_LEVEL.

    Its `(.*)$` scans the whole line for a newline: on a line without one the level word, a colon
    and a space decide.
    """
    has_nl = msg.str.contains("\n", literal=True)
    return pl.coalesce(
        pl.when(~has_nl).then(msg).str.extract(RE_UVICORN_LEVEL_WORD, 1),
        pl.when(has_nl).then(msg).str.extract(RE_UVICORN_LEVEL, 1),
    )
