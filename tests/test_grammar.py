"""Every rule of the server_log grammar is hit by at least one of its samples (lnav's "pattern does
not match any samples"): a rule no sample exercises is a rule nothing checks."""

from __future__ import annotations

import functools
import re

import polars as pl
import pytest

from forensics.parsers import server_log
from forensics.parsers.server_log import grammar
from tests.helpers import parse_text

HELP = "add a sample line that it decides to parsers/server_log/samples.py"


@functools.cache
def _parsed() -> tuple[set[str], set[str]]:
    """The event kinds and failure reasons the samples give, each sample parsed on its own."""
    kinds: set[str] = set()
    reasons: set[str] = set()
    for s in server_log.samples:
        tables, _ = parse_text(server_log, s.text, name=f"{s.name}.log")
        if "events" in tables:
            kinds |= set(tables["events"]["kind"].drop_nulls())
            reasons |= set(tables["events"]["reason"].drop_nulls())
    return kinds, reasons


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
