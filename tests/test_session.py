"""One session per command: the catalog entered once, no state kept between commands, and `--redact`
masking whole values before anything is cut from them."""

from __future__ import annotations

import json
import random
import string

import pytest
from click.testing import CliRunner

from forensics import catalog
from forensics.analysis import session as session_mod
from forensics.analysis import verdicts
from forensics.cli import main
from forensics.store import Store
from tests.conftest import ingest_paths, seed

ROOM = 2347773765981786812  # a failed room of the generated incident (tests/golden: _room_story)


def _counting(monkeypatch, module, name: str) -> list:
    """Calls of `module.name` from now on, the function still doing its work."""
    calls = []
    real = getattr(module, name)

    def counted(*a, **kw):
        calls.append(a)
        return real(*a, **kw)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("redact", [False, True])
def test_a_room_command_enters_the_catalog_once(planted_store, monkeypatch, redact):
    keys = _counting(monkeypatch, catalog, "snapshot_key")
    connects = _counting(monkeypatch, catalog, "connect")
    argv = ["room", str(ROOM), "--store", str(planted_store), "--format", "csv", *(["--redact"] if redact else [])]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    assert len(connects) == 1, "one connection per command"
    assert len(keys) == 1, "the snapshot key (a hash over every input and all view SQL) is computed once"


def test_reports_keep_nothing_between_commands():
    """The registries that outlived a command are gone: what one command reads is its session's."""
    for module, name in (
        (catalog, "_VERDICTS_FOR"),
        (catalog, "_MACROS"),
        (catalog, "_HELD"),
        (catalog, "snapshot_path"),
        (verdicts, "_SPARE"),
    ):
        assert not hasattr(module, name), f"{module.__name__}.{name}"


def test_a_session_carries_its_offsets_and_limits(cut_store):
    with session_mod.Session.open(
        cut_store["store"], offsets={"decode-0": 1.5}, materialize=False, limits=session_mod.Limits(rooms=3)
    ) as s:
        assert s.offsets == {"decode-0": 1.5} and s.limits.rooms == 3
        assert s.con.sql("SELECT host, offset_s FROM clock_offsets").fetchall() == [("decode-0", 1.5)]
        assert s.snapshots is None  # another store state than the one snapshotted
    with session_mod.Session.open(cut_store["store"]) as s:
        assert s.offsets == Store(cut_store["store"]).clocks() == {}
        assert s.snapshots is not None and s.snapshots.is_dir()


# -- --redact: whole values masked, then cut -------------------------------------------------------

SEED = seed(20261120)
LEAK = '\n<｜DSML｜invoke name="edit">\n<｜DSML｜parameter name="filePath" string="true">/x</｜DSML｜parameter>'


def _proxy_records(replies: list[str]) -> list[dict]:
    out = []
    for i, text in enumerate(replies):
        conn = f"c-{i}"
        out += [
            {
                "ts": f"2026-11-20T14:00:{10 + 4 * i:02d}.000Z",
                "dir": "req",
                "conn": conn,
                "body": {"model": "m", "stream": False, "messages": [{"role": "user", "content": "go on"}]},
            },
            {
                "ts": f"2026-11-20T14:00:{12 + 4 * i:02d}.000Z",
                "dir": "resp",
                "conn": conn,
                "status": 200,
                "latency_ms": 2000,
                "body": {
                    "id": f"chatcmpl-{i}",
                    "object": "chat.completion",
                    "model": "m",
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 50, "total_tokens": 60},
                },
            },
        ]
    return out


@pytest.fixture(scope="module")
def cut_store(tmp_path_factory):
    """A store whose secrets lie across the points where reports cut: a reply whose evidence excerpt
    starts inside a bearer token (40 characters before the leaked markup), and error lines whose
    message the named queries cut inside a GitHub token."""
    rng = random.Random(SEED)
    token = "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))
    base = tmp_path_factory.mktemp("cut")
    dump = base / "dump"
    (dump / "agent").mkdir(parents=True)
    (dump / "decode-0").mkdir(parents=True)
    bearer = "Bearer eyJhbGciOiJIUzI1NiJ9.BEARERTOKENpayload.sig"
    replies = [f"The request went out with {bearer} {LEAK}", "All good."]
    (dump / "agent" / "proxy.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _proxy_records(replies)), encoding="utf-8"
    )
    # the token at every offset around the cut of event_marks (300) and checksum_mismatches (200)
    lines = []
    for i, pad in enumerate(list(range(120, 200)) + list(range(220, 300))):
        lines.append(
            f"[2026-11-20 14:00:{i % 60:02d} DP0 TP0 EP0] Decode transfer failed for request rank=0 "
            f"decode_req.req.rid='r{i}' decode_req.req.bootstrap_room={1000 + i} with exception "
            f"KVTransferError(bootstrap_room={1000 + i}): {'x' * pad} {token} end"
        )
    (dump / "decode-0" / "sglang.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = base / "store"
    ingest_paths([dump], store)
    catalog.connect(Store(store), materialize=True).close()  # as an ingest leaves it
    return {"store": str(store), "token": token, "bearer": bearer}


def _run(store: str, *args: str) -> str:
    r = CliRunner().invoke(main, [*args, "--store", store])
    assert r.exit_code == 0, r.output
    return r.stdout + r.stderr


def _pieces(secret: str, n: int = 6) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1)]


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_evidence_masks_a_token_the_excerpt_cuts(cut_store, fmt):
    """The excerpt of a reply starts inside a bearer token: masked whole first, no piece of it is left."""
    plain = _run(cut_store["store"], "evidence", "--format", fmt)
    # the excerpt cuts the token: without --redact its tail is there
    assert "BEARERTOKENpayload" in plain and cut_store["bearer"] not in plain
    masked = _run(cut_store["store"], "evidence", "--format", fmt, "--redact")
    assert "BEARERTOKEN" not in masked and "payload.sig" not in masked, masked
    assert "secret:bearer" in masked  # what was there is said, whole (Markdown escapes its brackets)
    assert "⟦｜DSML｜⟧invoke" in masked  # and the excerpt still shows what fired


def test_replies_mask_a_token_the_excerpt_cuts(cut_store):
    masked = _run(cut_store["store"], "replies", "--corrupted", "--format", "json", "--redact")
    assert "BEARERTOKEN" not in masked and "[secret:bearer]" in masked


@pytest.mark.parametrize(
    "args",
    [
        ["query", "run", "event_marks"],
        ["query", "run", "corrupted_context"],
        ["query", "run", "checksum_mismatches"],
        ["sql", "-f", "queries/event_marks.sql"],
    ],
)
def test_named_queries_cut_after_they_mask(cut_store, args):
    """A message cut in SQL (event_marks at 300 characters) is masked whole, then cut: the token
    that lies across the cut leaves no piece behind."""
    token = cut_store["token"]
    plain = _run(cut_store["store"], *args, "--format", "json")
    masked = _run(cut_store["store"], *args, "--format", "json", "--redact")
    if args[-1] == "event_marks":
        # the cut falls inside the token on some lines: unmasked, pieces of it show
        assert any(p in plain for p in _pieces(token[4:])) and token not in plain
        assert "[secret:github]" in masked
    leaks = [p for p in _pieces(token[4:]) if p in masked]
    assert not leaks, leaks[:5]
    assert "\ue000" not in masked  # the mark of a value kept whole never reaches an output


def test_a_cut_mask_is_kept_whole():
    from forensics.reports.redact import Redactor

    red = Redactor()
    value = "x" * 10 + " ghp_" + "a1B2c3D4" * 5
    marked = f"{value}\ue00020\ue000"
    assert red.text(marked) == "x" * 10 + " [secret:github]"
    assert red.text("short\ue00020\ue000") == "short"


def test_a_query_binds_only_the_derived_views_it_reads(incident_store, monkeypatch):
    """DuckDB binds a view's whole tree of views when it is created: a session opened for one query
    creates the derived views and macros that query names and what they read, and the others only
    when a later query of the command asks for them, with the rows a whole catalog gives."""
    made = _counting(monkeypatch, catalog, "_create")
    offsets = {"decode-1": 2.5}  # a store state without snapshots: the views are bound from their SQL
    with session_mod.Session.open(incident_store, offsets=offsets, materialize=False) as s:
        s.only = "SELECT count(*) AS n FROM files"
        assert s.sql(s.only)["n"][0] == 20
        assert made == []
        rooms = s.sql("SELECT outcome, count(*) AS n FROM ROOMS GROUP BY ALL ORDER BY ALL").rows()
        assert sorted(a[1] for a in made) == sorted(f"{n}.sql" for n in catalog.needed("rooms"))
        assert "rooms" in catalog.needed("rooms") and "room_events" in catalog.needed("rooms")
    with session_mod.Session.open(incident_store, offsets=offsets, materialize=False) as whole:
        assert whole.sql("SELECT outcome, count(*) AS n FROM rooms GROUP BY ALL ORDER BY ALL").rows() == rooms


def test_sql_on_snapshots_creates_no_macro_it_does_not_call(planted_store, monkeypatch):
    made = _counting(monkeypatch, catalog, "_create")
    r = CliRunner().invoke(main, ["sql", "--store", str(planted_store), "SELECT count(*) AS n FROM files"])
    assert r.exit_code == 0, r.output
    assert made == []
    r = CliRunner().invoke(main, ["sql", "--store", str(planted_store), "SELECT excerpt('abcdef', 3) AS e"])
    assert r.exit_code == 0, r.output
    assert [a[1] for a in made] == ["excerpt.sql"]
