"""The command line as a new user meets it: ordinary mistakes are usage errors in the one error shape
(checked by value), names are checked, `summary` (snapshot), and the demo's timelines in every format.

Snapshots live in tests/golden/cli/ (`python -m tests.test_cli --update` rewrites them; read the diff).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden" / "cli"
INCIDENT = ROOT / "sample_logs" / "incident"


def run(*args, store=None):
    """(exit code, stdout, stderr) of `forensics ARGS` run in this process."""
    argv = [str(a) for a in args] + (["--store", str(store)] if store else [])
    r = CliRunner().invoke(main, argv)
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def incident(incident_store):
    """sample_logs/incident alone, as `make demo` ingests it (tests/conftest.py builds it with `forensics ingest`)."""
    return incident_store


# --- mistakes are usage errors -------------------------------------------------------------------------

TIME_HELP = (
    "  = help: write an ISO time (2026-11-20T14:00:00, UTC unless it carries a zone), or one relative to "
    "the store's last event: -30m, 1h, 2h ago, yesterday 14:00, 14:00\n"
)


@pytest.mark.parametrize(
    "args, stderr",
    [
        (("timeline", "--since", "soon"), "error: cannot read the time --since 'soon'\n" + TIME_HELP),
        (("timeline", "--until", "25:00"), "error: cannot read the time --until '25:00'\n" + TIME_HELP),
        (
            ("timeline", "--since", "-5m", "--until", "1h"),
            "error: --since -5m (2026-11-20 14:16:28 UTC) is after --until 1h (2026-11-20 13:21:28 UTC)\n"
            "  = help: swap them, or widen the window\n",
        ),
        (
            ("timeline", "--host", "nosuch"),
            "error: --host nosuch: no such host in the store\n"
            "  = help: known hosts: agent, decode-0, decode-1, prefill-0\n",
        ),
        (
            ("clocks", "set", "nosuch", "1.0"),
            "error: clocks set nosuch: no such host in the store\n"
            "  = help: known hosts: agent, decode-0, decode-1, prefill-0; add --force to record it for a host not "
            "ingested yet\n",
        ),
        (
            ("clocks", "unset", "decode-0"),
            "error: clocks unset decode-0: no offset is set for it\n  = help: offsets set: none\n",
        ),
        (("timeline", "--format", "png"), "error: --format png writes a file\n  = help: add -o FILE\n"),
        # click's own usage errors, in the same shape
        (
            ("timeline", "--nosuch"),
            "error: No such option '--nosuch'.\n  = help: `main timeline --help` lists what it takes\n",
        ),
        (
            ("timelinex",),
            "error: No such command 'timelinex'. Did you mean 'timeline'?\n"
            "  = help: `main --help` lists what it takes\n",
        ),
        (
            ("sql", "SELECT 1", "--format", "png"),
            "error: Invalid value for '--format': 'png' is not one of 'table', 'csv', 'tsv', 'json', 'jsonl', 'markdown', "
            "'parquet'.\n  = help: `main sql --help` lists what it takes\n",
        ),
    ],
)
def test_mistake_is_a_usage_error(incident, args, stderr):
    code, out, err = run(*args, store=incident)
    assert (code, out, err) == (2, "", stderr)


@pytest.mark.parametrize(
    "cmd",
    [
        ("timeline",),
        ("timeline", "--format", "svg"),
        ("evidence",),
        ("summary",),
        ("sql", "SELECT 1"),
        ("query", "run", "wedges"),
    ],
)
def test_missing_output_folder_is_a_usage_error(incident, tmp_path, cmd):
    target = tmp_path / "no" / "such" / ("out.svg" if "svg" in cmd else "out.txt")
    code, out, err = run(*cmd, "-o", target, store=incident)
    assert (code, out) == (2, "")
    assert err == (
        f"error: -o {target}: no folder {target.parent}\n"
        f"  = help: create it first (mkdir -p {target.parent}) or write elsewhere\n"
    )


def test_unknown_zone_is_refused_before_a_store_exists(tmp_path):
    store = tmp_path / "store"
    code, out, err = run("ingest", INCIDENT / "decode-0", "--tz", "Mars/Olympus", store=store)
    assert (code, out) == (2, "")
    assert err == (
        "error: --tz Mars/Olympus: no such time zone\n"
        "  = help: give an IANA zone name, e.g. UTC, Asia/Shanghai, America/Los_Angeles\n"
    )
    assert not store.exists()


def test_missing_input_is_refused_before_a_store_exists(tmp_path):
    store = tmp_path / "store"
    code, out, err = run("ingest", tmp_path / "no-such-dump", store=store)
    assert (code, out, err) == (
        2,
        "",
        f"error: no such file or directory: {tmp_path / 'no-such-dump'}\n  = help: check the path given to ingest\n",
    )
    assert not store.exists()


def test_compare_with_one_run_is_a_usage_error(incident):
    code, out, err = run("compare", incident)
    assert (code, out) == (2, "")
    assert err == (
        f"error: compare needs two runs, and {incident} holds one (store)\n"
        "  = help: give a second store (`forensics compare BASELINE_STORE OTHER_STORE`), or ingest each "
        "run into one store with `ingest --run LABEL`\n"
    )


@pytest.mark.slow
def test_broken_pipe_ends_quietly():
    """`forensics tables | head -c 10`: no traceback, no 'internal error', as with cat.

    The output must outgrow the pipe's buffer (64 KiB on Linux), or the whole of it is written
    before the reader goes and no write ever fails."""
    cmd = f"{sys.executable} -m forensics.cli tables"
    assert len(subprocess.run(cmd, shell=True, capture_output=True, cwd=ROOT).stdout) > 65536
    p = subprocess.run(
        f"{cmd} | head -c 10 > /dev/null; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (p.returncode, p.stderr) == (1, "")


# --- relative times ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "since, when, how",
    [
        ("1h", "2026-11-20 13:21:28 UTC", "1 h before"),
        ("-30m", "2026-11-20 13:51:28 UTC", "30 m before"),
        ("2h ago", "2026-11-20 12:21:28 UTC", "2 h before"),
        ("yesterday 14:00", "2026-11-19 14:00:00 UTC", "the day before"),
        ("14:05", "2026-11-20 14:05:00 UTC", None),
    ],
)
def test_relative_since_is_read_from_the_stores_last_event(incident, since, when, how):
    code, out, err = run("timeline", "--since", since, "--bucket", "1m", "--format", "json", store=incident)
    assert code == 0, err
    note = (
        f"note: --since {since}: {when}, {how} the store's last event (2026-11-20 14:21:28 UTC)"
        if how
        else f"note: --since {since}: {when}, on the day of the store's events nearest to it "
        "(they run 2026-11-20 13:58:25 UTC to 2026-11-20 14:21:28 UTC)"
    )
    assert note in err.splitlines()
    doc = json.loads(out)
    since_t = dt.datetime.fromisoformat(doc["since"])
    assert since_t.replace(microsecond=0) == dt.datetime.strptime(when, "%Y-%m-%d %H:%M:%S UTC").replace(
        tzinfo=dt.timezone.utc
    )
    # the first 1 min bucket is the one holding the instant
    assert doc["rows"][0]["bucket_start"][:16] == when[:16].replace(" ", "T")


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    "spans, clock, want",
    [
        # a dump of 16:30-16:33: 16:34 is that day, not the day before the last event
        ([("2026-02-19 16:30:08", "2026-02-19 16:33:31")], "16:34", "2026-02-19 16:34"),
        ([("2026-02-19 16:30:08", "2026-02-19 16:33:31")], "03:00", "2026-02-19 03:00"),
        # two dumps eleven days apart: each clock time on the day of the dump it falls in
        (
            [("2026-02-19 16:30:08", "2026-02-19 16:33:31"), ("2026-03-02 14:44:10", "2026-03-02 14:44:12")],
            "14:44",
            "2026-03-02 14:44",
        ),
        (
            [("2026-02-19 16:30:08", "2026-02-19 16:33:31"), ("2026-03-02 14:44:10", "2026-03-02 14:44:12")],
            "16:31",
            "2026-02-19 16:31",
        ),
        # a night shift: 23:55 before midnight, 00:05 after it
        ([("2026-02-18 23:50:00", "2026-02-19 00:10:00")], "23:55", "2026-02-18 23:55"),
        ([("2026-02-18 23:50:00", "2026-02-19 00:10:00")], "00:05", "2026-02-19 00:05"),
    ],
)
def test_a_clock_time_is_on_the_day_of_the_events_nearest_it(spans, clock, want):
    from forensics.analysis import when

    spans = [(_utc(a), _utc(b)) for a, b in spans]
    got, _ = when.parse(clock, spans[-1][1], "--since", spans)
    assert got == _utc(want)


def test_a_window_across_midnight_runs_forwards(tmp_path):
    import duckdb

    from forensics.analysis import when

    con = duckdb.connect()
    con.execute("CREATE TABLE files (lines BIGINT, first_ts TIMESTAMPTZ, last_ts TIMESTAMPTZ)")
    con.execute("INSERT INTO files VALUES (10, '2026-02-19 00:00:00+00', '2026-02-19 01:00:00+00')")
    since, until, notes = when.resolve(con, "23:30", "00:30")
    assert (since, until) == ("2026-02-18T23:30:00+00:00", "2026-02-19T00:30:00+00:00")
    assert notes[0] == ("--since 23:30: 2026-02-18 23:30:00 UTC, the day before, so that --since comes before --until")


def test_bucket_takes_days(incident):
    code, out, err = run("timeline", "--bucket", "1d", "--format", "json", store=incident)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["bucket_s"] == 86400 and [r["bucket_start"][:10] for r in doc["rows"]] == ["2026-11-20"]


# --- names are checked ---------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["event_marks", "room_spans", "host_load"])
def test_a_query_refuses_a_host_the_store_lacks_as_timeline_does(incident, query):
    code, out, err = run("query", "run", query, "-p", "host=nosuchhost", store=incident)
    assert (code, out) == (2, "")
    assert err == (
        "error: -p host=nosuchhost: no such host in the store\n"
        "  = help: known hosts: agent, decode-0, decode-1, prefill-0\n"
    )
    assert run("query", "run", query, "-p", "host=decode-1", "--format", "csv", store=incident)[0] == 0


def test_a_room_the_store_lacks_is_refused_with_some_it_has(incident):
    from forensics.analysis import names
    from forensics.analysis.session import Session
    from forensics.core.errors import UsageError
    from forensics.store import Store

    with Session.open(Store(incident)) as session:
        con = session.con
        [(room,)] = con.execute("SELECT min(bootstrap_room) FROM rooms").fetchall()
        names.check_room(con, room)
        with pytest.raises(UsageError) as e:
            names.check_room(con, 12345, opt="-p room=")
    assert e.value.render().splitlines()[0] == "error: -p room=12345: no such room in the store"
    assert f"known rooms: {room}, " in e.value.render() and " and 491 more" in e.value.render()


def test_named_queries_show_times_as_timestamps(incident):
    code, out, err = run("query", "run", "event_marks", "--format", "csv", store=incident)
    assert code == 0, err
    head, first = out.splitlines()[:2]
    assert head.split(",")[0] == "ts" and first.startswith("2026-11-20T")
    for query, cols in {"host_load": ["bucket_start"], "room_spans": ["t0", "t1"], "reply_hosts": ["t0", "t1"]}.items():
        doc = json.loads(run("query", "run", query, "--format", "json", store=incident)[1])
        assert all(str(doc[0][c]).startswith("2026-11-20") for c in cols), (query, doc[0])


def test_clocks_set_force_then_unset(tmp_path, incident):
    store = tmp_path / "store"
    shutil.copytree(incident, store)
    assert run("clocks", "set", "decode-9", "1.5", store=store)[0] == 2
    code, out, err = run("clocks", "set", "decode-9", "1.5", "--force", store=store)
    assert (code, out, err) == (0, "clock offsets applied: decode-9 +1.5 s\n", "")
    code, out, _ = run("summary", "--format", "json", store=store)
    assert json.loads(out)["warnings"][-1] == (
        "warning: clocks.json sets an offset for decode-9, a host the store "
        "holds no rows of (`forensics clocks unset decode-9` removes it)"
    )
    assert run("clocks", "unset", "decode-9", store=store)[:2] == (0, "clock offsets: none applied\n")
    assert json.loads((store / "clocks.json").read_text()) == {}


def test_ingest_that_recognises_nothing_fails_and_says_what_it_saw(tmp_path):
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "notes.md").write_text("# what we saw\n\n- the decode node hung\n")
    (tmp_path / "dump" / "config.json").write_text('{"tp": 8}\n')
    code, out, err = run("ingest", tmp_path / "dump", store=tmp_path / "store")
    assert (code, out) == (1, "")
    assert err.splitlines()[-2:] == [
        f"error: nothing recognised as a log or transcript in {tmp_path / 'dump'}: saw 2 files that are not logs: "
        "1 json, 1 markdown (see `files`, status 'skipped', for each one's skip_reason)",
        "  = help: point ingest at the dump's folder, or read the inputs with `--parser NAME` (see `forensics formats`)",
    ]


def test_two_machines_under_one_host_name_get_a_warning(tmp_path):
    files = [INCIDENT / "decode-0" / "sglang.log", INCIDENT / "decode-1" / "sglang.log"]
    if not all(f.exists() for f in files):
        pytest.skip("the sample incident names its decode logs differently")
    code, _, err = run("ingest", *files, store=tmp_path / "store")
    assert code == 0, err
    # ingest ends with the store's summary, which says it (and so does `summary` for whoever opens the store later)
    said = (
        f"warning: host sglang holds files of the same name from 2 folders ({files[0].parent}, {files[1].parent}): "
        "if they are different machines, their rows are merged; ingest each machine's inputs with `--host NAME`"
    )
    assert err.splitlines().count(said) == 1
    code, out, _ = run("summary", "--format", "json", store=tmp_path / "store")
    assert said in json.loads(out)["warnings"]


def test_one_folder_of_two_roles_gets_a_warning(tmp_path):
    node = tmp_path / "dump" / "node-a"
    node.mkdir(parents=True)
    for side in ("prefill-0", "decode-0"):
        shutil.copy(INCIDENT / side / "sglang.log", node / f"{side}.log")
    code, _, err = run("ingest", tmp_path / "dump", store=tmp_path / "store")
    assert code == 0, err
    assert (
        err.splitlines().count(
            "warning: host node-a holds inputs of 2 roles (decode, prefill): if they are "
            "different machines, their rows are merged; ingest each machine's inputs with "
            "`--host NAME`"
        )
        == 1
    )


def test_timeline_host_counts_its_transfers_on_either_side_and_only_its_replies(incident):
    def totals(*host):
        code, out, err = run("timeline", "--bucket", "1m", "--format", "json", *host, store=incident)
        assert code == 0, err
        rows = json.loads(out)["rows"]
        return sum(r["transfers"] for r in rows), sum(r["replies"] for r in rows)

    all_transfers, all_replies = totals()
    d0, d1, p0 = totals("--host", "decode-0"), totals("--host", "decode-1"), totals("--host", "prefill-0")
    # transfers are traced on the prefill side: a decode host's are those of the rooms it received
    assert d0[0] > 0 and d1[0] > 0 and d0[0] + d1[0] == all_transfers == p0[0]
    assert 0 < d0[1] < all_replies and 0 < d1[1] < all_replies and d0[1] + d1[1] <= all_replies


# --- summary -------------------------------------------------------------------------------------------


def _summary_text(store) -> str:
    code, out, err = run("summary", store=store)
    assert (code, err) == (0, "")
    return out.replace(str(store), "%STORE%").replace(str(ROOT) + "/", "")


def test_summary_snapshot(sample_store):
    """sample_logs/ whole (the incident and the era samples): hosts, rows, clocks and the warnings."""
    assert _summary_text(sample_store) == (GOLDEN / "summary.txt").read_text(encoding="utf-8")


def test_summary_json_agrees_with_the_store(incident):
    code, out, _ = run("summary", "--format", "json", store=incident)
    doc = json.loads(out)
    assert doc["kind"] == "forensics.summary" and [h["host"] for h in doc["hosts"]] == [
        "agent",
        "decode-0",
        "decode-1",
        "prefill-0",
    ]
    rows = {t["table"]: t["rows"] for t in doc["tables"]}
    code, out, _ = run(
        "sql",
        "SELECT (SELECT count(*) FROM replies) r, (SELECT count(*) FROM files) f",
        "--format",
        "json",
        store=incident,
    )
    assert [rows["replies"], rows["files"]] == [json.loads(out)[0]["r"], json.loads(out)[0]["f"]]
    assert {e["host_b"] for e in doc["clock_estimates"]} == {"decode-0", "decode-1"}


def test_ingest_ends_with_the_summary_and_tables_shows_row_counts(incident):
    code, out, err = run("tables", "replies", store=incident)
    assert code == 0
    n = json.loads(run("summary", "--format", "json", store=incident)[1])["tables"]
    replies = next(t["rows"] for t in n if t["table"] == "replies")
    assert f"replies (view) — {replies:,} rows:" in out


# --- the demo's timelines ------------------------------------------------------------------------------

INCIDENT_DAY = (
    dt.datetime(2026, 11, 20, 13, 50, tzinfo=dt.timezone.utc),
    dt.datetime(2026, 11, 20, 14, 30, tzinfo=dt.timezone.utc),
)


@pytest.fixture(scope="module")
def demo_files(incident, tmp_path_factory):
    out = tmp_path_factory.mktemp("demo-out")
    for fmt, name in (
        ("markdown", "timeline.md"),
        ("html", "timeline.html"),
        ("png", "timeline.png"),
        ("svg", "timeline.svg"),
        ("table", "timeline.txt"),
    ):
        code, _, err = run("timeline", "--format", fmt, "-o", out / name, store=incident)
        assert code == 0, err
    return out


def test_demo_table_and_markdown_show_the_incident(demo_files):
    for name in ("timeline.txt", "timeline.md"):
        text = (demo_files / name).read_text(encoding="utf-8")
        assert "wedge decode-1" in text and "abort storm" in text and "corrupted" in text, name
        assert "2026-11-20 14:1" in text and "2024" not in text


def test_demo_png_is_a_whole_image(demo_files):
    from matplotlib import image

    data = (demo_files / "timeline.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.imread(str(demo_files / "timeline.png")).shape[:2] == (900, 1600)


def test_demo_svg_shows_wedge_storm_and_corrupted_replies(demo_files):
    root = ET.parse(demo_files / "timeline.svg").getroot()
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    joined = " ".join(texts)
    assert re.search(r"wedge \(\w+, \d+ s\)", joined) and "abort storm (" in joined
    assert {"parse leak", "incoherent"} <= set(texts) and "decode-1 (decode)" in texts
    ticks = [t for t in texts if re.fullmatch(r"\d\d:\d\d:\d\d", t)]
    assert ticks and all("13:50:00" <= t <= "14:30:00" for t in ticks)


def test_demo_html_spans_the_incident(demo_files):
    text = (demo_files / "timeline.html").read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', text, re.S)
    page = json.loads(m.group(1))
    lo, hi = (dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc) for t in page["window"])
    assert INCIDENT_DAY[0] <= lo < hi <= INCIDENT_DAY[1]
    assert page["wedges"] and page["storms"] and any(r["corrupted"] for r in page["replies"])


@pytest.mark.slow
def test_eras_in_the_same_store_stay_out_of_the_chart(sample_store, tmp_path):
    """The store of all sample_logs/ (eras dated 2024-2026 beside the incident): the chart is drawn, over the
    incident, with a note; a long window at 10 s is narrowed with a note, never refused."""
    code, _, err = run("timeline", "--format", "svg", "-o", tmp_path / "t.svg", store=sample_store)
    assert code == 0, err
    assert err.splitlines()[0] == (
        "note: window 2026-11-20 13:58:25 UTC to 2026-11-20 14:21:28 UTC, the span of the inputs holding most lines: "
        "6 small inputs far outside it left out (host eras); pass --since / --until to see them"
    )
    ticks = [
        t.text
        for t in ET.parse(tmp_path / "t.svg").getroot().iter("{http://www.w3.org/2000/svg}text")
        if t.text and re.fullmatch(r"\d\d:\d\d:\d\d", t.text)
    ]
    assert ticks and all("13:50:00" <= t <= "14:30:00" for t in ticks)
    code, _, err = run(
        "timeline",
        "--format",
        "png",
        "--bucket",
        "10s",
        "--since",
        "2024-01-01",
        "-o",
        tmp_path / "t.png",
        store=sample_store,
    )
    assert code == 0, err
    assert (
        "note: the chart shows 2026-11-18 06:48:18 UTC to 2026-11-20 14:21:28 UTC: 2024-01-01 00:00:00 UTC to "
        "2026-11-20 14:21:28 UTC in 10 s buckets would be 9111729 of them, and a chart holds 20000; pass a wider "
        "--bucket, or --since / --until for another stretch"
    ) in err.splitlines()


def update() -> None:
    """Rewrite the snapshots from a fresh store of sample_logs/."""
    import tempfile

    from tests.goldens import sample_store as build

    with tempfile.TemporaryDirectory() as d:
        store = build(f"{d}/store")
        GOLDEN.mkdir(parents=True, exist_ok=True)
        (GOLDEN / "summary.txt").write_text(_summary_text(store), encoding="utf-8")


if __name__ == "__main__" and "--update" in sys.argv:
    update()
