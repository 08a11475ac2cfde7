"""Stats lines and prefixes as real servers write them (docs/formats/SGLANG.md, "What real dumps carry"): every complete stats line of
every real excerpt is in `batches` with its time, ranks and values, read independently here; and
the shapes' samples give the same tables on the native and polars paths, in one block and in many."""

from __future__ import annotations

import datetime as dt
import os
import re

import pytest

from forensics.core.inputs import Scan
from forensics.parsers import server_log
from tests.conftest import REAL_LOGS
from tests.helpers import parse_text

REAL = str(REAL_LOGS)


def _real_files() -> list[str]:
    import glob

    return sorted(glob.glob(os.path.join(REAL, "*.log"))) + sorted(
        glob.glob(os.path.join(REAL, "mooncake_incident", "*.log"))
    )


# A stats line as a reader finds it, whatever is in front of it; the sglang prefix just before the
# leader gives the time and the rank tags.
STATS = re.compile(r"(?:Prefill|Decode|new fill) batch[.,] ?")
PREFIX = re.compile(
    r"\[(?:([0-9]{4}-[0-9]{2}-[0-9]{2}) )?([0-9]{2}:[0-9]{2}:[0-9]{2})((?: [A-Z_]+[0-9]+)*)\] "
    r"(?:Prefill|Decode|new fill) batch"
)
TAGS = {
    "DP": "dp_rank",
    "PP": "pp_rank",
    "ATTN_CP": "attn_cp_rank",
    "MOE_DP": "moe_dp_rank",
    "TP": "tp_rank",
    "EP": "ep_rank",
}
# keys whose column means the same on both sides, and how to read their value
COLUMNS = {
    "#new-seq": ("new_seq", int),
    "#new-token": ("new_token", int),
    "#cached-token": ("cached_token", int),
    "#running-req": ("running_req", int),
    "#queue-req": ("queue_req", int),
    "#token": ("num_token", int),
    "token usage": ("token_usage", float),
    "gen throughput (token/s)": ("gen_throughput", float),
    "input throughput (token/s)": ("input_throughput", float),
    "accept len": ("accept_len", float),
    "accept rate": ("accept_rate", float),
    "#retracted-req": ("retracted_req", int),
    "pre-allocated usage": ("prealloc_usage", float),
    "cache hit rate": ("cache_hit_rate", lambda v: float(v.rstrip("%")) / 100),
}
# a few values read off the excerpts by eye: file -> line -> column -> value
BY_EYE = {
    "01_pd_prefill_stats_dp_tp_ep_unbootstrapped.log": {
        1: {"kind": "prefill", "bootstrap_req": 0, "inflight_req": 1, "input_throughput": 1326.0, "running_req": None},
        3: {"dp_rank": 13, "queue_req": 3, "new_token": 512},
    },
    "07_pd_decode_stats_kibana_prefix_glm51.log": {
        2: {
            "kind": "decode",
            "prefix": "May 16, 2026 @ 20:44:55.560",
            "num_token": 31936,
            "prealloc_req": 0,
            "transfer_req": 0,
            "gen_throughput": 0.39,
        },
        3: {"accept_len": 2.6, "accept_rate": 0.53, "gen_throughput": 43.98},
    },
    "13_prefill_stats_2024_cache_hit_rate.log": {
        1: {"cached_token": 888, "cache_hit_rate": 0.0, "token_usage": 0.11, "running_req": 69, "queue_req": 130},
        7: {"cached_token": 786, "queue_req": 124, "tail": None},
    },
    "18_decode_stats_multinode_dp_tp.log": {
        1: {"dp_rank": 9, "tp_rank": 9, "running_req": 12, "num_token": 768, "gen_throughput": 3.83},
        3: {"dp_rank": 15, "gen_throughput": 3.82},
    },
    "27_pd_decode_stats_v059_prealloc_transfer_retracted.log": {
        1: {
            "kind": "decode",
            "num_token": 33,
            "gen_throughput": 0.04,
            "prealloc_req": 0,
            "transfer_req": 0,
            "retracted_req": 0,
            "cuda_graph": True,
        },
        2: {"num_token": 73, "gen_throughput": 78.2},
    },
}


def complete_stats_lines(text: str) -> dict[int, str]:
    """line number -> line, for the stats lines of an excerpt but its last line (cut by the page)."""
    ls = text.split("\n")
    if ls and ls[-1] == "":
        ls.pop()
    return {i: ln for i, ln in enumerate(ls[:-1], 1) if STATS.search(ln)}


def expected(line: str) -> dict:
    """What a reader sees in one stats line: time as written, ranks, and the values of COLUMNS."""
    want: dict = {}
    m = PREFIX.search(line)
    if m:
        want["ts_raw"] = f"{m.group(1)} {m.group(2)}" if m.group(1) else m.group(2)
        # a shipper's absolute time (k8s, docker) is the better clock, and the line's ts
        if m.group(1) and not re.match(r"\{|[0-9]{4}-[0-9]{2}-[0-9]{2}T", line):
            want["ts"] = dt.datetime.fromisoformat(f"{m.group(1)} {m.group(2)}").replace(tzinfo=dt.timezone.utc)
        tags = dict(re.findall(r" ([A-Z_]+?)([0-9]+)", m.group(3)))
        want.update({col: int(tags[t]) if t in tags else None for t, col in TAGS.items()})
    body = line[STATS.search(line).end() :].rstrip()
    for key, value in re.findall(r"(?:^|, )([^,:]+): ([^,]+)", body):
        if key in COLUMNS and COLUMNS[key][0] not in want:
            col, read = COLUMNS[key]
            want[col] = read(value.strip())
    return want


@pytest.mark.real_data
@pytest.mark.parametrize("path", _real_files(), ids=os.path.basename)
def test_every_complete_stats_line_is_read_with_its_values(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    tables, ctx = parse_text(server_log, text, name=os.path.basename(path))
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    assert ctx.lines == n_lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines
    found = complete_stats_lines(text)
    batches = tables.get("batches")
    rows = {r["line_no"]: r for r in batches.iter_rows(named=True)} if batches is not None else {}
    missing = sorted(set(found) - set(rows))
    assert not missing, f"stats lines not in batches: {[found[i][:100] for i in missing]}"
    for line_no, line in found.items():
        for col, v in expected(line).items():
            assert rows[line_no][col] == v, f"line {line_no} {col}: {rows[line_no][col]!r} != {v!r}"
    for line_no, want in BY_EYE.get(os.path.basename(path), {}).items():
        for col, v in want.items():
            assert rows[line_no][col] == v, f"line {line_no} {col}: {rows[line_no][col]!r} != {v!r}"


def test_the_reader_of_this_test_reads_what_it_should():
    """The independent reading above, on the shapes it must tell apart."""
    assert expected(
        "[2024-11-29 10:28:29 TP0] Prefill batch. #new-seq: 2, cache hit rate: 12.50%, #queue-req: 130"
    ) == {
        "ts_raw": "2024-11-29 10:28:29",
        "ts": dt.datetime(2024, 11, 29, 10, 28, 29, tzinfo=dt.timezone.utc),
        "dp_rank": None,
        "pp_rank": None,
        "attn_cp_rank": None,
        "moe_dp_rank": None,
        "tp_rank": 0,
        "ep_rank": None,
        "new_seq": 2,
        "cache_hit_rate": 0.125,
        "queue_req": 130,
    }
    assert expected("Decode batch. #running-req: 12, #token: 4096") == {"running_req": 12, "num_token": 4096}
    text = (
        "[2024-11-29 10:28:29 TP0] Decode batch. #running-req: 1\nx\nDecode batch, #running-req: 2\nDecode batch, #r\n"
    )
    assert list(complete_stats_lines(text)) == [1, 3]


SHAPES = [
    s
    for s in server_log.samples
    if s.name
    in {
        "time_only_prefix_2024",
        "bare_stats_line_inherits_ts",
        "new_fill_batch_may_2024",
        "stats_extra_keys",
        "wrapper_ray_actor",
        "wrapper_unittest_dots",
        "truncated_last_line",
        "truncated_last_line_closed_item",
        "stats_gpu_tag_mid_2024",
        "stats_behind_an_unknown_head",
    }
]


def test_every_shape_has_its_sample():
    assert len(SHAPES) == 10


@pytest.mark.native
@pytest.mark.parametrize("block_bytes", [None, 120])
@pytest.mark.parametrize("sample", SHAPES, ids=[s.name for s in SHAPES])
def test_shapes_both_ways(monkeypatch, sample, block_bytes):
    """Small blocks put the dated line, the time-only lines after it and a bare stats line and the
    timed line above it in different blocks and passes: the times still follow the file."""
    from tests.test_native import assert_same

    scan = Scan(block_bytes=block_bytes, group_blocks=2) if block_bytes else Scan()
    one, _ = parse_text(server_log, sample.text, scan=scan)
    got = assert_same(sample.text.encode(), monkeypatch, scan=scan)
    for t in ("events", "batches"):
        if t in one:
            assert got[t].select("line_no", "ts").rows() == one[t].select("line_no", "ts").rows()


def test_time_only_lines_take_the_date_from_the_option_then_the_file(tmp_path):
    from forensics.parsers.base import Context, Source

    text = (
        "[23:59:58 TP0] Decode batch. #running-req: 1, #token: 9, token usage: 0.00, #queue-req: 0\n"
        "[00:00:03 TP0] Decode batch. #running-req: 1, #token: 10, token usage: 0.00, #queue-req: 0\n"
        "[00:00:01 TP1] Decode batch. #running-req: 1, #token: 11, token usage: 0.00, #queue-req: 0\n"
        "[23:50:00 TP0] Decode batch. #running-req: 1, #token: 12, token usage: 0.00, #queue-req: 0\n"
    )
    p = tmp_path / "old.log"
    p.write_text(text)
    os.utime(p, (dt.datetime(2024, 6, 2, 12, tzinfo=dt.timezone.utc).timestamp(),) * 2)

    def days(**kw):
        ctx = Context(host="h", **kw)
        src = Source(path=str(p), fs_path=str(p), size=p.stat().st_size, mtime=p.stat().st_mtime)
        out = list(server_log.parse(src, ctx))
        b = out[0]["batches"]
        return [t.strftime("%m-%d %H:%M:%S") for t in b["ts"]], ctx.notes

    ts, notes = days(date="2024-03-09")
    # back by seconds is interleaving; back by hours is midnight, twice
    assert ts == ["03-09 23:59:58", "03-10 00:00:03", "03-10 00:00:01", "03-10 23:50:00"]
    assert any("from --date (2024-03-09)" in n for n in notes)
    ts, notes = days()
    assert ts[0] == "06-02 23:59:58" and any("modification date" in n for n in notes)
    ts, _ = days(tz="Asia/Shanghai", date="2024-03-09")
    assert ts[0] == "03-09 15:59:58"  # local time, stored as UTC


def test_date_option_accepts_a_date_or_a_year():
    from forensics.core.errors import UsageError
    from forensics.ingest.pipeline import Options

    assert (Options(date="2024-11-29").date, Options(date="2024-11-29").year) == ("2024-11-29", None)
    assert (Options(date="2024").date, Options(date="2024").year) == (None, 2024)
    with pytest.raises(UsageError):
        Options(date="29/11/2024")
    with pytest.raises(UsageError):
        Options(date="2024-11-29", year=2023)
