"""`forensics sql` and the output options as a user meets them, checked by value as the goldens are.

Each mistake: exit 2 and the one error shape, line by line. Wide results: snapshots at 100 and 160
columns (tests/golden/cli, `python -m tests.goldens --update` rewrites them). Every data format
written and read back equal.
"""

from __future__ import annotations

import io
import json
import os

import polars as pl
import pytest
from click.testing import CliRunner

from forensics.cli import main
from tests.goldens import CLI_SNAPSHOTS, GOLDEN, ROOT, SERVER_SNAPSHOTS, cli_snapshot


def run(*args, input=None):
    return CliRunner(env={"COLUMNS": None}).invoke(main, [str(a) for a in args], input=input)


def ok(*args, input=None):
    r = run(*args, input=input)
    assert r.exit_code == 0, r.output[-2000:]
    return r


# -- mistakes: exit 2, one error, its help -------------------------------------------------------------

MISTAKES = [
    (
        ["sql", "SELECT 1", "--format", "csv", "-o", "{tmp}/x.json"],
        [
            "error: --format csv does not fit -o {tmp}/x.json: a .json file holds json",
            "  = help: leave --format out (the extension chooses json)",
        ],
    ),
    (
        ["sql", "SELECT 1", "-o", "{tmp}/x.html"],
        [
            "error: `forensics sql` writes no .html files",
            "  = help: its formats: table, csv, tsv, json, jsonl, markdown, parquet; pick one with --format or the "
            "extension of -o (.csv, .tsv, .json, .jsonl, .md, .parquet, .txt)",
        ],
    ),
    (
        ["sql", "SELECT 1", "--format", "parquet"],
        ["error: --format parquet writes a file", "  = help: add -o FILE.parquet (or -o - into a pipe)"],
    ),
    (
        ["sql", "SELECT 1", "-f", "{tmp}/q.sql"],
        ["error: give the SQL once: as QUERY or as -f FILE", "  = help: drop one of them"],
    ),
    (
        ["sql", "-f", "{tmp}/none.sql"],
        [
            "error: cannot read -f {tmp}/none.sql: No such file or directory",
            "  = help: give a readable UTF-8 file of SQL",
        ],
    ),
    (
        ["sql", "-f", "{tmp}/empty.sql"],
        ["error: no SQL in {tmp}/empty.sql", "  = help: the file or stdin holds no statement"],
    ),
    (
        ["sql", "SELECT $n", "-p", "n"],
        ["error: -p wants NAME=VALUE, got 'n'", "  = help: e.g. -p n=41, -p host:str=decode-0"],
    ),
    (
        ["sql", "SELECT $n", "-p", "n:int=4.5"],
        ["error: -p n:int=4.5: '4.5' is not a int", "  = help: give a int, or -p n:str=VALUE"],
    ),
    (
        ["sql", "SELECT $n", "-p", "n:date=2026-11-20"],
        ["error: -p n:date: no type 'date'", "  = help: types: str, int, float, bool"],
    ),
    (
        ["query", "run", "wedges", "-o", "{tmp}/w.svg"],
        [
            "error: `forensics query run` writes no .svg files",
            "  = help: its formats: table, csv, tsv, json, jsonl, markdown, parquet; pick one with --format or the "
            "extension of -o (.csv, .tsv, .json, .jsonl, .md, .parquet, .txt)",
        ],
    ),
    (
        ["timeline", "--format", "png", "-o", "{tmp}/x.svg"],
        [
            "error: --format png does not fit -o {tmp}/x.svg: a .svg file holds svg",
            "  = help: leave --format out (the extension chooses svg)",
        ],
    ),
    (
        ["evidence", "--format", "json", "-o", "{tmp}/e.md"],
        [
            "error: --format json does not fit -o {tmp}/e.md: a .md file holds markdown",
            "  = help: leave --format out (the extension chooses markdown)",
        ],
    ),
    (
        ["evidence", "-o", "{tmp}/e.csv"],
        [
            "error: `forensics evidence` writes no .csv files",
            "  = help: its formats: markdown, json; pick one with --format or the extension of -o (.json, .md)",
        ],
    ),
    # an extension that names no format is never written as the terminal table
    (
        ["timeline", "-o", "{tmp}/x.pdf"],
        [
            "error: `forensics timeline` writes no .pdf files",
            "  = help: its formats: table, markdown, csv, json, html, png, svg, perfetto; pick one with --format or "
            "the extension of -o (.csv, .json, .md, .html, .png, .svg, .txt)",
        ],
    ),
    (
        ["timeline", "-o", "{tmp}/x.jpg"],
        [
            "error: `forensics timeline` writes no .jpg files",
            "  = help: its formats: table, markdown, csv, json, html, png, svg, perfetto; pick one with --format or "
            "the extension of -o (.csv, .json, .md, .html, .png, .svg, .txt)",
        ],
    ),
    (
        ["sql", "SELECT 1", "-o", "{tmp}/y.pdf"],
        [
            "error: `forensics sql` writes no .pdf files",
            "  = help: its formats: table, csv, tsv, json, jsonl, markdown, parquet; pick one with --format or the "
            "extension of -o (.csv, .tsv, .json, .jsonl, .md, .parquet, .txt)",
        ],
    ),
    (
        ["sql", "SELECT 1", "-o", "{tmp}/result"],
        [
            "error: -o {tmp}/result: no extension says the format",
            "  = help: its formats: table, csv, tsv, json, jsonl, markdown, parquet; pick one with --format or the "
            "extension of -o (.csv, .tsv, .json, .jsonl, .md, .parquet, .txt)",
        ],
    ),
    (
        ["summary", "-o", "{tmp}/s.pdf"],
        [
            "error: `forensics summary` writes no .pdf files",
            "  = help: its formats: table, json; pick one with --format or the extension of -o (.json, .txt)",
        ],
    ),
]


@pytest.mark.parametrize(
    "args,expected", MISTAKES, ids=[" ".join(a[:2]) + f"-{i}" for i, (a, _) in enumerate(MISTAKES)]
)
def test_mistakes_are_usage_errors(sample_store, tmp_path, args, expected):
    (tmp_path / "q.sql").write_text("SELECT 1\n")
    (tmp_path / "empty.sql").write_text("-- nothing here\n\n")
    r = run(*[a.format(tmp=tmp_path) for a in args], "--store", sample_store)
    assert r.exit_code == 2, r.output
    assert r.stderr.splitlines() == [e.format(tmp=tmp_path) for e in expected]
    assert r.stdout == "" and not (tmp_path / "x.json").exists() and not (tmp_path / "x.svg").exists()


def test_a_file_named_for_no_format_is_written_as_format_says(sample_store, tmp_path):
    q = "SELECT 1 AS a"
    table = ok("sql", q, "--store", sample_store, "--max-width", "80").stdout
    ok("sql", q, "--store", sample_store, "--max-width", "80", "-o", tmp_path / "r.txt")
    assert (tmp_path / "r.txt").read_text() == table
    # --format given: the name is the user's, whatever it ends with
    ok("sql", q, "--store", sample_store, "--format", "csv", "-o", tmp_path / "r.pdf")
    assert (tmp_path / "r.pdf").read_text() == "a\n1\n"


# -- SQL errors keep DuckDB's hints; the help fits -------------------------------------------------------

SQL_ERRORS = [
    (
        "SELECT * FROM replys",
        [
            'error: Catalog Error: Table with name replys does not exist! Did you mean "replies"?',
            "  | SELECT * FROM replys",
            "  = help: `forensics tables` lists the tables and views",
        ],
    ),
    (
        "SELECT turnid FROM replies",
        [
            'error: Binder Error: Referenced column "turnid" not found in FROM clause! Candidate bindings: "turn_id", '
            '"truncated", "t_end", "parent_id", "error_rid"',
            "  | SELECT turnid FROM replies",
            "  = help: `forensics tables TABLE` lists a table's columns",
        ],
    ),
    (
        "SELEC 1",
        [
            'error: Parser Error: syntax error at or near "SELEC"',
            "  | SELEC 1",
            "  = help: the SQL is not valid DuckDB SQL near the text shown; `forensics query show NAME` prints working "
            "queries (`forensics query list` names them)",
        ],
    ),
    (
        "-- rooms by host\nSELECT host\nFROM rooms WHERE (",
        [
            'error: Parser Error: syntax error at or near "("',
            "  --> SQL:3",
            "  | FROM rooms WHERE (",
            "  = help: the SQL is not valid DuckDB SQL near the text shown; `forensics query show NAME` prints working "
            "queries (`forensics query list` names them)",
        ],
    ),
    (
        "SELECT $n + 1",
        [
            "error: Invalid Input Error: Values were not provided for the following parameters: n",
            "  | SELECT $n + 1",
            "  = help: bind each with -p: -p n=VALUE",
        ],
    ),
]


@pytest.mark.parametrize("query,expected", SQL_ERRORS)
def test_sql_errors_keep_hints_and_fit_the_help(sample_store, query, expected):
    r = run("sql", query, "--store", sample_store)
    assert r.exit_code == 1, r.output
    assert r.stderr.splitlines() == expected
    assert "forensics tables" not in r.stderr or "Catalog" in r.stderr or "Binder" in r.stderr


def test_an_error_in_a_file_names_the_file_and_line(sample_store, tmp_path):
    q = tmp_path / "bad.sql"
    q.write_text("-- a comment first\nSELECT host\nFROM rooms\nWHERE nosuch = 1\n")
    r = run("sql", "-f", q, "--store", sample_store)
    assert r.exit_code == 1
    # DuckDB names no line for a binding error: the file, and the statement's first line
    assert r.stderr.splitlines()[1:3] == [f"  --> {q}", "  | SELECT host"]
    q.write_text("-- a comment first\nSELECT host\nFROM rooms\nWHERE (\n")
    r = run("sql", "-f", q, "--store", sample_store)
    assert r.stderr.splitlines()[1:3] == [f"  --> {q}:4", "  | WHERE ("]


# -- where the SQL comes from -----------------------------------------------------------------------------


def test_sql_opening_with_a_comment_is_the_query_and_its_header_gives_defaults(sample_store):
    text = (ROOT / "queries" / "abort_storms.sql").read_text()
    named = ok("query", "run", "abort_storms", "--store", sample_store, "--format", "json").stdout
    assert json.loads(named), "the sample incident has abort storms"
    # the shell's "$(cat FILE)": one argument starting with `--`, options before and after it
    assert ok("sql", "--store", sample_store, text, "--format", "json").stdout == named
    assert (
        ok("sql", "-f", ROOT / "queries" / "abort_storms.sql", "--store", sample_store, "--format", "json").stdout
        == named
    )
    assert ok("sql", "-", "--store", sample_store, "--format", "json", input=text).stdout == named
    assert ok("sql", "-f", "-", "--store", sample_store, "--format", "json", input=text).stdout == named
    # a declared parameter still takes -p, converted to its declared type
    fewer = json.loads(ok("sql", text, "-p", "min_aborts=100000", "--store", sample_store, "--format", "json").stdout)
    assert fewer == []


def test_an_option_value_that_looks_like_a_comment_stays_a_value(sample_store):
    r = ok("sql", "-p", "c:str=-- not sql", "SELECT $c AS c", "--store", sample_store, "--format", "csv")
    assert r.stdout == "c\n'-- not sql\n"


def test_parameters_are_typed(sample_store):
    r = ok(
        "sql",
        "SELECT $n + 1 AS n1, typeof($n) AS tn, typeof($x) AS tx, typeof($s) AS ts, $s AS s, "
        "typeof($b) AS tb, $e AS e, typeof($h) AS th",
        "-p",
        "n=41",
        "-p",
        "x=2.5e3",
        "-p",
        "s:str=007",
        "-p",
        "b:bool=true",
        "-p",
        "e=-3",
        "-p",
        "h=decode-0",
        "--store",
        sample_store,
        "--format",
        "json",
    )
    assert json.loads(r.stdout) == [
        {
            "n1": 42,
            "tn": "INTEGER",
            "tx": "DOUBLE",
            "ts": "VARCHAR",
            "s": "007",
            "tb": "BOOLEAN",
            "e": -3,
            "th": "VARCHAR",
        }
    ]


# -- formats ---------------------------------------------------------------------------------------------

ROUND_TRIP = (
    "SELECT * FROM (VALUES (1, 2.5, 'plain', TRUE, TIMESTAMP '2026-11-20 14:00:00.123456', [1, 2]), "
    "(-7, NULL, e'tab\\there\\nnew line \\\\ back', FALSE, NULL, []), "
    "(9007199254740993, -0.125, NULL, NULL, TIMESTAMP '2026-11-20 14:00:01', NULL)) "
    "t(i, f, s, b, ts, l) ORDER BY i"
)


def _frame(store):
    from tests.conftest import sql

    return sql(store, ROUND_TRIP)


def test_parquet_reads_back_equal(sample_store, tmp_path):
    ok("sql", ROUND_TRIP, "--store", sample_store, "-o", tmp_path / "r.parquet")
    assert pl.read_parquet(tmp_path / "r.parquet").equals(_frame(sample_store))
    # -o - on a pipe: the same bytes on stdout
    r = CliRunner().invoke(main, ["sql", ROUND_TRIP, "--store", sample_store, "--format", "parquet", "-o", "-"])
    assert r.exit_code == 0
    assert pl.read_parquet(io.BytesIO(r.stdout_bytes)).equals(_frame(sample_store))


def test_jsonl_reads_back_as_the_json_rows(sample_store, tmp_path):
    lines = ok("sql", ROUND_TRIP, "--store", sample_store, "--format", "jsonl").stdout.splitlines()
    whole = json.loads(ok("sql", ROUND_TRIP, "--store", sample_store, "--format", "json").stdout)
    assert [json.loads(ln) for ln in lines] == whole
    assert whole[0]["s"] == "tab\there\nnew line \\ back" and whole[0]["f"] is None and whole[0]["l"] == []
    # beyond 2^53 an integer is its exact digits as a string; the decimals are numbers
    assert whole[2]["i"] == "9007199254740993" and whole[1]["i"] == 1 and whole[1]["f"] == 2.5
    ok("sql", ROUND_TRIP, "--store", sample_store, "-o", tmp_path / "r.jsonl")
    assert (tmp_path / "r.jsonl").read_text().splitlines() == lines


def _tsv_cell(cell: str):
    if cell == "\\N":
        return None
    out, i = [], 0
    while i < len(cell):
        if cell[i] == "\\":
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[cell[i + 1]])
            i += 2
        else:
            out.append(cell[i])
            i += 1
    return "".join(out)


def test_tsv_reads_back_equal(sample_store, tmp_path):
    text = ok("sql", ROUND_TRIP, "--store", sample_store, "--format", "tsv").stdout
    lines = text.splitlines()
    assert len(lines) == 4 and all(ln.count("\t") == 5 for ln in lines)
    rows = [[_tsv_cell(c) for c in ln.split("\t")] for ln in lines]
    assert rows[0] == ["i", "f", "s", "b", "ts", "l"]
    assert rows[1:] == [
        ["-7", None, "tab\there\nnew line \\ back", "false", None, "[]"],
        ["1", "2.500", "plain", "true", "2026-11-20T14:00:00.123456", "[1, 2]"],
        ["9007199254740993", "-0.125", None, None, "2026-11-20T14:00:01", None],
    ]
    ok("sql", ROUND_TRIP, "--store", sample_store, "-o", tmp_path / "r.tsv")
    assert (tmp_path / "r.tsv").read_text() == text


@pytest.mark.slow
def test_extension_chooses_the_format_and_dash_is_stdout(sample_store, tmp_path):
    q = "SELECT 1 AS a, 'x' AS b"
    for ext, expected in {
        "csv": "a,b\n1,x\n",
        "tsv": "a\tb\n1\tx\n",
        "jsonl": '{"a":1,"b":"x"}\n',
        "md": "| a | b |\n|---|---|\n| 1 | x |\n",
    }.items():
        r = ok("sql", q, "--store", sample_store, "-o", tmp_path / f"r.{ext}")
        assert (tmp_path / f"r.{ext}").read_text() == expected and r.stderr == f"wrote {tmp_path}/r.{ext}\n"
    assert json.loads(
        (ok("sql", q, "--store", sample_store, "-o", tmp_path / "r.json"), (tmp_path / "r.json").read_text())[1]
    ) == [{"a": 1, "b": "x"}]
    r = ok("sql", q, "--store", sample_store, "--format", "csv", "-o", "-")
    assert r.stdout == "a,b\n1,x\n" and r.stderr == "" and not os.path.exists("-")
    # a timeline to .json is the timeline document; to .html the page
    window = ["--since", "2026-11-20T14:00:00", "--until", "2026-11-20T14:20:00", "--bucket", "1m"]
    ok("timeline", "--store", sample_store, *window, "-o", tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text())["kind"] == "forensics.timeline"
    ok("timeline", "--store", sample_store, *window, "-o", tmp_path / "t.html")
    assert (tmp_path / "t.html").read_text().lstrip().lower().startswith("<!doctype html")
    r = ok("timeline", "--store", sample_store, *window, "--format", "svg", "-o", "-")
    assert "<svg" in r.stdout
    r = ok("evidence", "--store", sample_store, "-o", "-", "--format", "json")
    assert json.loads(r.stdout)["kind"] == "forensics.evidence"


def test_json_sums_and_decimals_are_numbers(sample_store):
    r = ok(
        "sql",
        "SELECT sum(x) AS s, sum(x::DECIMAL(10, 2)) AS d, 1.25::DECIMAL(5, 2) AS p, "
        "12345678901234567.25::DECIMAL(20, 2) AS wide, (2::HUGEINT ** 60)::HUGEINT AS big, "
        "count(*) AS n FROM range(10) t(x)",
        "--store",
        sample_store,
        "--format",
        "json",
    )
    assert json.loads(r.stdout) == [
        {"s": 45, "d": 45.0, "p": 1.25, "wide": "12345678901234567.25", "big": "1152921504606846976", "n": 10}
    ]


def test_tables_json_is_one_document_and_points_to_no_missing_command():
    doc = json.loads(ok("tables", "--format", "json").stdout)
    assert doc["kind"] == "forensics.tables" and {t["name"] for t in doc["tables"]} >= {"events", "rooms", "replies"}
    events = next(t for t in doc["tables"] if t["name"] == "events")
    assert {"column", "type", "meaning"} == set(events["columns"][0])
    assert json.loads(ok("tables", "rooms", "--format", "json").stdout)["tables"][0]["name"] == "rooms"
    assert "forensics kinds" not in ok("tables").stdout


# -- tables for a person ---------------------------------------------------------------------------------


def test_wide_results_fit_the_width_and_say_what_is_cut(sample_store):
    for width in (100, 160):
        out = ok(
            "sql", "SELECT * FROM rooms ORDER BY bootstrap_room LIMIT 3", "--store", sample_store, "--max-width", width
        ).stdout
        lines = out.splitlines()
        assert max(map(len, lines[:-1])) <= width and "…" in lines[1]
        assert lines[-1].startswith("3 rows, 30 columns (") and "--wide shows everything" in lines[-1]
        # the first and the last columns are the ones kept
        assert "bootstrap_room" in lines[1] and "sides_seen" in lines[1]
    wide = ok("sql", "SELECT * FROM rooms ORDER BY bootstrap_room LIMIT 3", "--store", sample_store, "--wide").stdout
    assert "columns (" not in wide and "checksum_verdict" in wide and "…" not in wide.splitlines()[1]


def test_long_lists_show_the_first_few_and_a_count(sample_store):
    out = ok("sql", "SELECT range(3000) AS rooms, [1, 2] AS few", "--store", sample_store).stdout
    assert "[0, 1, 2, … +2997 more]" in out and "[1, 2]" in out
    assert "+2997 more" not in ok("sql", "SELECT range(3000) AS rooms", "--store", sample_store, "--wide").stdout
    # data formats keep the whole list
    assert (
        len(
            json.loads(ok("sql", "SELECT range(3000) AS r", "--store", sample_store, "--format", "json").stdout)[0]["r"]
        )
        == 3000
    )


def test_cells_are_never_emoji_or_markup(sample_store):
    out = ok(
        "sql",
        "SELECT '2001:db8:0:b:1::1' AS ip, ':ok: [bold]x[/bold]' AS t",
        "--store",
        sample_store,
        "--max-width",
        100,
    ).stdout
    assert "2001:db8:0:b:1::1" in out and ":ok: [bold]x[/bold]" in out


def test_abort_storm_table_is_readable(sample_store):
    for width in (100, 160):
        out = ok(
            "timeline",
            "--store",
            sample_store,
            "--since",
            "2026-11-20T14:00:00",
            "--until",
            "2026-11-20T14:20:00",
            "--bucket",
            "1m",
            "--max-width",
            width,
        ).stdout
        storms = out[out.index("abort storms") :]
        assert '"host":' not in storms and "{" not in storms
        assert max(len(ln) for ln in out.splitlines() if ln[:1] in "┏┃┡│└") <= width
        if width == 160:
            assert "host_counts" in storms and "prefill-0 80" in storms


@pytest.mark.parametrize("name", sorted(CLI_SNAPSHOTS))
def test_cli_snapshots(sample_store, name):
    expected = (GOLDEN / "cli" / f"{name}.txt").read_text()
    assert cli_snapshot(sample_store, CLI_SNAPSHOTS[name]) == expected, (
        f"tests/golden/cli/{name}.txt differs: `python -m tests.goldens --update`, then read the diff"
    )


@pytest.mark.parametrize("name", sorted(SERVER_SNAPSHOTS))
def test_server_store_snapshots_at_three_widths(server_store, name):
    expected = (GOLDEN / "cli" / f"{name}.txt").read_text()
    assert cli_snapshot(server_store, SERVER_SNAPSHOTS[name]) == expected, (
        f"tests/golden/cli/{name}.txt differs: `python -m tests.goldens --update`, then read the diff"
    )


def test_a_store_without_replies_shows_no_reply_columns(server_store):
    r = ok("timeline", "--store", server_store, "--bucket", "1m", "--format", "markdown")
    header = next(ln for ln in r.stdout.splitlines() if ln.startswith("| bucket_start"))
    assert "replies" not in header and "corrupted_rate" not in header and "failed_requests" in header
