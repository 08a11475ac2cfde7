"""Markup that leaked into the text: DSML (S1-S6), special tokens (S7) and think tags (S8)."""

from __future__ import annotations

import functools
import re

from forensics.analysis.detectors.base import BOS, DEFAULT, DSML, EOS, FW, LB, Hit, Thresholds
from forensics.analysis.detectors.quoting import _FENCE, _INLINE, _blank, _count, _find, prose

RE_DSML = re.compile(re.escape(DSML))
# look-alikes seen in the wild (vllm#30541, flocks#687): `<|DSML|`, `< | DSML | `, `<||DSML||`; a bare
# `| DSML |` counts only before a tag name, so a table cell reading "DSML" is not one
RE_DSML_DEGRADED = re.compile(
    r"<\s*/?\s*[|｜]{1,2}\s*DSML\s*[|｜]{1,2}"
    r"|[|｜]{1,2}\s*DSML\s*[|｜]{1,2}\s*(?:function_calls|tool_calls|invoke|parameter|tool_use)"
)
RE_WRAPPER_OPEN = re.compile(f"<{DSML}(?:function_calls|tool_calls)>")
RE_WRAPPER_CLOSE = re.compile(f"</{DSML}(?:function_calls|tool_calls)>")
RE_INVOKE_OPEN = re.compile(f"<{DSML}invoke\\b")
RE_INVOKE_CLOSE = re.compile(f"</{DSML}invoke>")
RE_PARAM_OPEN = re.compile(f"<{DSML}parameter\\b")
RE_PARAM_CLOSE = re.compile(f"</{DSML}parameter>")
RE_PARAM_TAG = re.compile(f"<{DSML}parameter\\b[^>\\n]*>")
RE_PLAIN_PARAM = re.compile(r"<parameter\s+name=")
RE_V3_TOOL = re.compile(
    f"<{FW}tool{LB}(?:calls{LB}begin|call{LB}begin|calls{LB}end|call{LB}end|sep|output{LB}begin|outputs{LB}begin|output{LB}end|outputs{LB}end){FW}>"
)
RE_SPECIAL = re.compile(
    f"{re.escape(BOS)}|{re.escape(EOS)}|<{FW}User{FW}>|<{FW}Assistant{FW}>|<{FW}tool{LB}[a-z{LB}]+{FW}>"
    r"|<function_results>|</function_results>|<result>"
)
# ASCII / underscore look-alikes of the special tokens
RE_SPECIAL_DEGRADED = re.compile(
    r"<\s*[|｜]\s*(?:begin[_▁ ]of[_▁ ]sentence|end[_▁ ]of[_▁ ]sentence|User|Assistant|tool[_▁ ][a-z_▁ ]+?)\s*[|｜]\s*>"
)
RE_THINK = re.compile(r"</?think>")
RE_THINK_CLOSE = re.compile(r"</think>")


# Markup in a code fence is mostly someone showing the format (the user asked what a leak looks
# like), yet a model in tool-call mode that fences its call has leaked it all the same. Nobody types
# the exact DSML marker (U+FF5C) but the model, so a fence holding exact DSML counts as emitted
# unless the reply's prose or the user's turn talks about markup. Inline code is always a quote, and
# a fence of ASCII look-alikes (a regex, a bug report) is too.
_TALKS_ABOUT_MARKUP = re.compile(
    r"\b(?:DSML|markup|tool[- _]?calls?|function[_ ]calls?|invokes?|parameters?|parsers?|templates?|formats?"
    r"|dialects?|tokens?|tags?|markers?|grammar|encod\w*|leak\w*|sglang|vllm|deepseek|examples?)\b",
    re.I,
)


@functools.lru_cache(maxsize=256)
def _markup_views(content: str, reasoning: str, user_text: str) -> tuple[str, str]:
    talks = bool(_TALKS_ABOUT_MARKUP.search(user_text)) or any(
        _TALKS_ABOUT_MARKUP.search(prose(t)) for t in (content, reasoning) if DSML in t
    )
    out = []
    for text in (content, reasoning):
        if talks or DSML not in text:
            out.append(prose(text))
        else:
            kept = _FENCE.sub(lambda m: m.group() if DSML in m.group() else _blank(m), text)
            out.append(_INLINE.sub(_blank, kept))
    return out[0], out[1]


def markup_text(turn, field: str) -> str:
    """`content` or `reasoning` as the markup signatures read it: quoted code blanked, offsets unchanged."""
    views = _markup_views(turn.content or "", turn.reasoning or "", turn.user_text or "")
    return views[0] if field == "content" else views[1]


def _fields(turn) -> list[tuple[str, str, str]]:
    """(field, original, text the markup signatures read) for content and reasoning."""
    return [(f, getattr(turn, f) or "", markup_text(turn, f)) for f in ("content", "reasoning")]


def _hit_in(sig: str, field: str, m: re.Match, note: str = "", degraded: bool = False) -> Hit:
    return Hit(sig, field, m.start(), m.end(), note, degraded)


def _dsml_anywhere(text: str) -> re.Match | None:
    return _find(RE_DSML, text) or _find(RE_DSML_DEGRADED, text)


# --- S1-S16 -------------------------------------------------------------------------------------
def s1_dsml_in_content(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S1 DSML_IN_CONTENT: DSML (exact or degraded) in `content` while `tool_calls` is empty."""
    if turn.tool_calls:
        return None
    text = markup_text(turn, "content")
    m = _find(RE_DSML, text)
    if m:
        return _hit_in("S1", "content", m)
    m = _find(RE_DSML_DEGRADED, text)
    if m:
        return _hit_in("S1", "content", m, "degraded", degraded=True)
    return None


_RE_S2 = re.compile(f"<{DSML}(?:function_calls|tool_calls)>|<{DSML}invoke")
_RE_S2_DEGRADED = re.compile(r"<\s*[|｜]{1,2}\s*DSML\s*[|｜]{1,2}\s*(?:function_calls|tool_calls|invoke)")


def s2_dsml_in_reasoning(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S2 DSML_IN_REASONING: a DSML wrapper or invoke inside `reasoning` (the model skipped `</think>`)."""
    text = markup_text(turn, "reasoning")
    m = _find(_RE_S2, text)
    if m:
        return _hit_in("S2", "reasoning", m)
    m = _find(_RE_S2_DEGRADED, text)
    return _hit_in("S2", "reasoning", m, "degraded", degraded=True) if m else None


def s3_unbalanced_dsml(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S3 UNBALANCED_DSML: opening and closing DSML tags of a pair differ in number."""
    for field, _raw, text in _fields(turn):
        for name, op, cl in (
            ("wrapper", RE_WRAPPER_OPEN, RE_WRAPPER_CLOSE),
            ("invoke", RE_INVOKE_OPEN, RE_INVOKE_CLOSE),
            ("parameter", RE_PARAM_OPEN, RE_PARAM_CLOSE),
        ):
            n_open, n_close = _count(op, text), _count(cl, text)
            if n_open != n_close:
                m = _find(op, text) or _find(cl, text)
                note = f"{name}: {n_open} open, {n_close} closed"
                if turn.finish_reason == "length":
                    note += " (truncated at length)"
                return _hit_in("S3", field, m, note)
    return None


def s4_bare_invoke(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S4 BARE_INVOKE: a DSML invoke with no `function_calls` / `tool_calls` wrapper around it."""
    for field, _raw, text in _fields(turn):
        m = _find(RE_INVOKE_OPEN, text)
        if m and not _find(RE_WRAPPER_OPEN, text) and not _find(RE_WRAPPER_CLOSE, text):
            return _hit_in("S4", field, m)
    return None


def expected_dialect(model: str | None) -> str | None:
    """Tool-call dialect a deployment of `model` should emit, from its name; None if unknown."""
    if not model:
        return None
    m = model.lower()
    if re.search(r"v4\b|v4[-_.]", m):
        return "dsml_v4"
    if re.search(r"v3[._-]?2", m):
        return "dsml_v32"
    if re.search(r"v3[._-]?1|\br1\b|-r1|v3(?:[-_]0324)?\b", m):
        return "v3"
    return None


_DIALECTS = (
    ("dsml_v32", re.compile(f"<{DSML}function_calls>")),
    ("dsml_v4", re.compile(f"<{DSML}tool_calls>")),
    ("v3", re.compile(f"<{FW}tool{LB}calls?{LB}begin{FW}>")),
)


def s5_wrong_dialect(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S5 WRONG_DIALECT: tool markup of another model generation than the deployment's (template/parser mismatch)."""
    want = expected_dialect(turn.model)
    if want is None:
        return None
    for field, _raw, text in _fields(turn):
        for dialect, pat in _DIALECTS:
            if dialect == want:
                continue
            m = _find(pat, text)
            if m:
                return _hit_in("S5", field, m, f"{dialect} markup from a {want} deployment")
    return None


_RE_STRING_ATTR = re.compile(r'\bstring="([^"]*)"')


def s6_malformed_param(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S6 MALFORMED_PARAM: a parameter without the DSML marker, without `string=`, or with a bad `string=` value.

    A plain `<parameter name=` counts only beside DSML markup, so XML in ordinary prose does not.
    (A call whose `arguments == "{}"` while the raw invoke body has parameters is the same fault, but
    telling needs the raw completion text, which no transcript source keeps.)
    """
    for field, _raw, text in _fields(turn):
        if not _dsml_anywhere(text):
            continue
        m = _find(RE_PLAIN_PARAM, text)
        if m:
            return _hit_in("S6", field, m, "parameter without the DSML marker")
        for m in RE_PARAM_TAG.finditer(text):
            attr = _RE_STRING_ATTR.search(m.group())
            if attr is None:
                return _hit_in("S6", field, m, "DSML parameter without string=")
            if attr.group(1) not in ("true", "false"):
                return _hit_in("S6", field, m, f'string="{attr.group(1)}"')
    return None


def s7_special_token_leak(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S7 SPECIAL_TOKEN_LEAK: BOS/EOS, turn markers, V3 tool tokens or tool-result wrappers in the text."""
    for field, _raw, text in _fields(turn):
        m = _find(RE_SPECIAL, text)
        if m:
            return _hit_in("S7", field, m, "tool token" if RE_V3_TOOL.fullmatch(m.group()) else "")
    for field, _raw, text in _fields(turn):
        m = _find(RE_SPECIAL_DEGRADED, text)
        if m:
            return _hit_in("S7", field, m, "degraded tool token" if "tool" in m.group() else "degraded", degraded=True)
    return None


def s8_think_tag_leak(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S8 THINK_TAG_LEAK: `<think>` / `</think>` in `content`, or more than one `</think>` in the whole reply."""
    content = prose(turn.content)
    m = _find(RE_THINK, content)
    if m:
        return _hit_in("S8", "content", m)
    reasoning = prose(turn.reasoning)
    if _count(RE_THINK_CLOSE, content) + _count(RE_THINK_CLOSE, reasoning) > 1:
        m = _find(RE_THINK_CLOSE, reasoning)
        return _hit_in("S8", "reasoning", m, "several </think>")
    return None
