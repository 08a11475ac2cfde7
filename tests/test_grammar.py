"""Every rule of the server_log grammar is hit by at least one of its samples (lnav's "pattern does
not match any samples"): a rule no sample exercises is a rule nothing checks."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import polars as pl
import pytest

from forensics.parsers import server_log
from forensics.parsers.server_log import grammar
from tests.helpers import parse_text

HELP = "add a sample line that it decides to parsers/server_log/samples.py"


@functools.cache
def _parsed() -> tuple[set[str], set[str], set[str]]:
    """The event kinds and failure reasons the samples give, and the events columns some sample
    fills, each sample parsed on its own."""
    kinds: set[str] = set()
    reasons: set[str] = set()
    filled: set[str] = set()
    for s in server_log.samples:
        tables, _ = parse_text(server_log, s.text, name=f"{s.name}.log")
        if "events" in tables:
            ev = tables["events"]
            kinds |= set(ev["kind"].drop_nulls())
            reasons |= set(ev["reason"].drop_nulls())
            filled |= {c for c in ev.columns if ev[c].null_count() < ev.height}
    return kinds, reasons, filled


def _lines() -> pl.Series:
    """Every sample line, and what is left of it after each wrapper or prefix that matches it."""
    lines = pl.Series([line for s in server_log.samples for line in s.text.splitlines()], dtype=pl.Utf8)
    for rules in (grammar.WRAPPERS, grammar.FAMILIES):
        tails = [lines.str.extract(p, re.compile(p).groups) for _, p in rules if p.endswith("(.*)$")]
        lines = pl.concat([lines, *tails]).drop_nulls()
    return lines


@pytest.mark.parametrize("kind, pattern", grammar.KIND_RULES, ids=[k for k, _ in grammar.KIND_RULES])
def test_every_line_kind_rule_has_a_sample(kind, pattern):
    assert kind in _parsed()[0], f"line kind rule {kind!r} ({pattern}) does not match any samples: {HELP}"


@pytest.mark.parametrize("reason, pattern", grammar.REASON_RULES, ids=[r for r, _ in grammar.REASON_RULES])
def test_every_failure_reason_rule_has_a_sample(reason, pattern):
    assert reason in _parsed()[1], f"failure reason rule {reason!r} ({pattern}) does not match any samples: {HELP}"


@pytest.mark.parametrize("kind, pattern", grammar.ENGINE_KIND_RULES, ids=[k for k, _ in grammar.ENGINE_KIND_RULES])
def test_every_other_engines_kind_rule_has_a_sample(kind, pattern):
    # other engines' kinds share their names with SGLang's: the rule's own pattern must hit a sample's message
    assert _lines().str.contains(pattern).any(), f"engine kind rule {kind!r} ({pattern}) does not match any samples"


@pytest.mark.parametrize(
    "rule, pattern", grammar.WRAPPERS + grammar.FAMILIES, ids=[n for n, _ in grammar.WRAPPERS + grammar.FAMILIES]
)
def test_every_wrapper_and_line_family_has_a_sample(rule, pattern):
    assert _lines().str.contains(pattern).any(), (
        f"wrapper or line family {rule!r} ({pattern}) does not match any "
        f"samples: add a sample line it matches to parsers/server_log/samples.py"
    )


def test_a_rule_without_a_sample_is_named():
    """The check itself: a rule that nothing exercises fails with its name."""
    rule = ("kind_without_sample", r"^no sample line says this$")
    with pytest.raises(AssertionError, match="'kind_without_sample'.*does not match any samples"):
        test_every_line_kind_rule_has_a_sample(*rule)
    with pytest.raises(AssertionError, match="RE_WITHOUT_SAMPLE .*does not match any samples"):
        test_every_event_field_rule_has_a_sample("RE_WITHOUT_SAMPLE", rule[1])


def test_the_raised_line_rule_tells_a_tail_from_lone_frames():
    """RE_EXC_RAISED, which a frame tail needs to open a record, matches the tail sample's last
    line and no line of the lone frame sample."""
    by_name = {s.name: s.text.splitlines() for s in server_log.samples}
    raised = [x for x in by_name["traceback_tail_at_excerpt_start"] if re.search(grammar.RE_EXC_RAISED, x)]
    assert raised == ["RuntimeError: prealloc queue corrupted"]
    assert not [x for x in by_name["lone_frame_line_is_no_exception"] if re.search(grammar.RE_EXC_RAISED, x)]


def test_the_glued_head_gates_pass_every_line_it_splits():
    """classify._strip_glued_heads tests GLUED_HEAD_WORDS and RE_GLOG_TIME before RE_GLUED_HEAD: a
    line the rule splits that neither passes would never be split."""
    lines = [x for s in server_log.samples for x in s.text.splitlines()]
    split = [x for x in lines if re.search(grammar.RE_GLUED_HEAD, x)]
    assert len(split) >= 2
    for x in split:
        assert any(w in x for w in grammar.GLUED_HEAD_WORDS) or re.search(grammar.RE_GLOG_TIME, x), x
        assert not x.startswith("[") and not re.search(grammar.RE_GLOG_LEAD, x), x
    assert [x for x in lines if re.search(grammar.RE_GLOG_LEAD, x)], "no sample starts with a glog head"


# identifier patterns no documented line takes first: `(bootstrap_room: N)` is read by the
# `bootstrap_room[=:]` pattern before it, so no sample can show it filling the room alone
NOT_YET_SAMPLED = {("ROOM_PATTERNS", 5)}

# The rules events.py applies beside the kind and reason tables: the fields of event lines and the
# gates of its own kinds, each by its grammar name (a table's rules by the column they fill)
EVENT_RULES: list[tuple[str, str]] = [
    *(
        (n, getattr(grammar, n))
        for n in (
            "RE_ACCESS",
            "RE_UVICORN_ACCESS_LINE",
            "RE_CLF_ACCESS_LINE",
            "RE_AIOHTTP_ACCESS",
            "RE_UVICORN_LEVEL_WORD",
            "GLOG_FILE_NIXL",
            "GLOG_FILE_MOONCAKE",
            "RE_TRANSPORT_WARNING",
            "RE_NIXL_BINDING",
            "RE_COLLECTIVE_TIMEOUT",
            "RE_ROUTER_FAILURE",
            "RE_ROUTER_HEALTH",
            "RE_KVT_ERROR",
            "RE_TB_KVT_REASON",
            "RE_TB_KVT_ROOM",
            "RE_EXCEPTION_REASON",
            "RE_JSON_TS",
            "RE_RANK",
            "RE_SPAN_RID",
        )
    ),
    *((f"REQUEST_FIELDS[{c}]", p) for c, p, _ in grammar.REQUEST_FIELDS),
    *((f"PEER_PATTERNS[{i}]", p) for i, p in enumerate(grammar.PEER_PATTERNS)),
    *((f"ROUTER_STATUS[{c}]", p) for c, p in grammar.ROUTER_STATUS),
    *((f"ROUTER_PEER_PATTERNS[{i}]", p) for i, p in enumerate(grammar.ROUTER_PEER_PATTERNS)),
    *(
        (f"{t}[{i}]", p)
        for t in ("RID_PATTERNS", "ROOM_PATTERNS", "ENGINE_RID_PATTERNS")
        for i, p in enumerate(getattr(grammar, t))
        if (t, i) not in NOT_YET_SAMPLED
    ),
]
# what events.py imports from the grammar that the tests above check, or that is no pattern a sample
# could hit (names of kinds and families, the literal gates of a family of patterns)
CHECKED_ELSEWHERE = {"KIND_RULES", "REASON_RULES", "ENGINE_KIND_RULES"}
NOT_RULES = {
    "ENGINE_FAMILIES",
    "FAILURE_KINDS",
    "WARNING_KINDS",
    "SEVERITY_BY_KIND",
    "PRE_PEER",
    "PRE_REQ",
    "PRE_RID",
    "PRE_ROOM",
    "RANK_LITERAL",
    "JSON_TS_LEAD",
    "SPAN_RID_LITERAL",
    "TB_KVT_ROOM_LITERAL",
}

EVENTS_PY = Path(server_log.__file__).parent / "events.py"


@pytest.mark.parametrize("rule, pattern", EVENT_RULES, ids=[n for n, _ in EVENT_RULES])
def test_every_event_field_rule_has_a_sample(rule, pattern):
    assert _lines().str.contains(pattern).any(), (
        f"event field rule {rule} ({pattern}) does not match any samples: add a sample line it matches, "
        f"with the events field it fills in its expect, to parsers/server_log/samples.py"
    )


@pytest.mark.parametrize("column", [c for c, _, _ in grammar.REQUEST_FIELDS if not c.startswith("_")])
def test_every_request_field_is_filled_by_a_sample(column):
    assert column in _parsed()[2], (
        f"no sample's events fill {column} (REQUEST_FIELDS): add a request log sample that has it "
        f"to parsers/server_log/samples.py"
    )


@pytest.mark.parametrize(
    "gate, rules",
    [
        ("PRE_REQ", [p for _, p, _ in grammar.REQUEST_FIELDS]),
        ("PRE_PEER", grammar.PEER_PATTERNS),
        ("RANK_LITERAL", [grammar.RE_RANK]),
        ("SPAN_RID_LITERAL", [grammar.RE_SPAN_RID]),
        ("TB_KVT_ROOM_LITERAL", [grammar.RE_TB_KVT_ROOM]),
        ("JSON_TS_LEAD", [grammar.RE_JSON_TS]),
    ],
)
def test_a_field_rules_gate_passes_every_sample_line_it_matches(gate, rules):
    """events.py runs these rules only on the lines their gate passes: a line a rule matches that
    the gate stops would never be read."""
    lines = _lines()
    g = getattr(grammar, gate)
    if gate.startswith("PRE_"):
        passes = lines.str.contains(g)
    elif gate == "JSON_TS_LEAD":
        passes = lines.str.starts_with(g)
    else:
        passes = lines.str.contains(g, literal=True)
    for p in rules:
        stopped = lines.filter(lines.str.contains(p) & ~passes)
        assert stopped.is_empty(), f"{gate} stops a line {p} reads: {stopped[0]!r}"


def test_every_grammar_name_events_py_uses_is_checked():
    """A pattern events.py takes from the grammar is in EVENT_RULES or a table checked above; a new
    one must be added to EVENT_RULES (and hit by a sample), or to NOT_RULES if it is no pattern."""
    tree = ast.parse(EVENTS_PY.read_text())
    used = {
        a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "forensics.parsers.server_log.grammar"
        for a in node.names
    }
    known = {n.split("[")[0] for n, _ in EVENT_RULES} | CHECKED_ELSEWHERE | NOT_RULES
    assert used - known == set(), f"events.py uses grammar names no grammar test checks: {sorted(used - known)}"


# the polars string methods that take a pattern (a regex unless literal=True)
PATTERN_METHODS = {
    "contains",
    "contains_any",
    "count_matches",
    "extract",
    "extract_all",
    "extract_groups",
    "extract_many",
    "find",
    "replace",
    "replace_all",
    "split",
    "starts_with",
    "ends_with",
    "strip_prefix",
    "strip_suffix",
}


def test_events_py_defines_no_pattern_of_its_own():
    """events.py applies the grammar's rules: a pattern or literal it passes to a `.str` method is a
    name from grammar.py, never a string written in events.py (where no sample would check it)."""
    inline = []
    for node in ast.walk(ast.parse(EVENTS_PY.read_text())):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PATTERN_METHODS
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "str"
        ):
            continue
        args = [*node.args[:1], *(k.value for k in node.keywords if k.arg in ("pattern", "prefix", "suffix"))]
        inline += [
            f"line {node.lineno}: .str.{node.func.attr}({ast.unparse(a)})"
            for a in args
            if isinstance(a, ast.JoinedStr) or (isinstance(a, ast.Constant) and isinstance(a.value, str))
        ]
    assert not inline, f"events.py writes its own patterns; move them to grammar.py as named rules: {inline}"
