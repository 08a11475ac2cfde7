"""User SQL that tries to change the store or reach the machine: each is a usage error, and the store's bytes stay."""

from __future__ import annotations

import json

import polars as pl

from tests.attacks import Attack, attack

# (tokens, what the error line says): a token in '…' is a literal kept as written; every other token is
# spelled in a drawn letter case, and between tokens go drawn spaces, newlines and comments
ATTEMPTS = [
    (["DROP", "VIEW", "replies"], "DROP is not allowed"),
    (["CREATE", "TABLE", "t", "AS", "SELECT", "1"], "CREATE is not allowed"),
    (["COPY", "(SELECT", "1)", "TO", "'{batches}'"], "COPY is not allowed"),
    (["COPY", "(SELECT", "1)", "TO", "'{batches}'", "(USE_TMP_FILE", "false)"], "COPY is not allowed"),
    (
        ["COPY", "(SELECT", "'{{}}'", "AS", "x)", "TO", "'{store}/clocks.json'", "(FORMAT", "csv)"],
        "COPY is not allowed",
    ),
    (["ATTACH", "'{out}/evil.db'", "AS", "evil"], "ATTACH is not allowed"),
    (["INSTALL", "httpfs"], "INSTALL is not allowed"),
    (["LOAD", "httpfs"], "LOAD is not allowed"),
    (["SELECT", "*", "FROM", "read_text('/etc/passwd')"], "reading /etc/passwd is not allowed"),
    (["SELECT", "*", "FROM", "read_parquet('{out}/elsewhere.parquet')"], "is not allowed"),
    (["SELECT", "*", "FROM", "'{out}/elsewhere.parquet'"], "is not allowed"),
    (["SET", "enable_external_access", "=", "true"], "SET enable_external_access is not allowed"),
    (["PRAGMA", "memory_limit", "=", "'1GB'"], "PRAGMA memory_limit is not allowed"),
    (["PRAGMA", "enable_profiling"], "PRAGMA enable_profiling is not allowed"),
]
GAPS = [" ", "  ", "\n", "\t", " /* note */ ", "\n-- a comment\n", "/**/"]


def _spell(t: Attack, tokens: list[str], values: dict) -> str:
    """The statement with a drawn case per letter and drawn gaps; sometimes after a harmless statement."""
    out = []
    for tok in tokens:
        if tok.startswith("'") or "'" in tok:
            out.append(tok.format(**values))
        else:
            out.append("".join(c.upper() if t.rng.random() < 0.5 else c.lower() for c in tok))
    sql = out[0] + "".join(t.rng.choice(GAPS) + tok for tok in out[1:])
    lead = t.rng.choice(["", "-- why\n", "/* x */ ", "SELECT 1;\n", "\n  "])
    return lead + sql + t.rng.choice(["", ";", " ;\n", ";\n-- done"])


@attack
def user_sql_cannot_change_the_store(t: Attack) -> None:
    """DROP VIEW, CREATE TABLE, COPY over a store Parquet file and over clocks.json, ATTACH, INSTALL/LOAD,
    read_text('/etc/passwd'), read_parquet outside the store, SET enable_external_access and PRAGMA, each in
    a drawn spelling: each exits 2 with one `error:` line naming what is not allowed and a help line, the
    store's bytes are unchanged, nothing is written outside, and the store still answers right afterwards."""
    _, n = t.good_log()
    t.ingest(t.root / "dump")
    store = t.root / "store"
    t.cli("evidence", "--store", store)  # the derived-view cache is written by reports, before any attempt
    out = t.root / "outside"
    out.mkdir()
    pl.DataFrame({"secret": ["outside the store"]}).write_parquet(out / "elsewhere.parquet")
    outside_before = sorted(p.name for p in out.iterdir())
    values = {"store": store, "out": out, "batches": sorted(store.glob("tables/batches/*/*/part-*.parquet"))[0]}
    for tokens, expected in ATTEMPTS:
        sql = _spell(t, tokens, values)
        run = t.user_sql(sql)
        first = run.stderr.splitlines()[0] if run.stderr else ""
        assert first.startswith("error: ") and expected.lower() in first.lower(), (sql, run.stderr)
        assert any(ln.startswith("  = help: ") for ln in run.stderr.splitlines()), (sql, run.stderr)
        assert run.stdout == "", (sql, run.stdout)
        assert sorted(p.name for p in out.iterdir()) == outside_before, (sql, sorted(out.iterdir()))
    got = t.user_sql("SELECT count(*) AS n FROM batches", "--format", "json", exit=0)
    assert json.loads(got.stdout) == [{"n": n}]
    clocks = t.user_sql("SELECT count(*) AS n FROM clock_offsets", "--format", "json", exit=0)
    assert json.loads(clocks.stdout)[0]["n"] >= 0
    assert json.loads(t.user_sql("SELECT count(*) AS n FROM replies", "--format", "json", exit=0).stdout) == [{"n": 0}]
