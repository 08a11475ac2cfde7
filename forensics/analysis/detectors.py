"""Corruption signatures S1-S16 of an assistant reply.

The signatures are described in docs/formats/TRANSCRIPTS.md, "Corruption signatures S1-S16".

Each signature is one function `sN(turn, th) -> Hit | None`; `assess_session` runs them over the
turns of one session, adds the session verdicts (per-session entropy baseline for S14, the
'config' class for a leak on every tool call) and picks one class per turn.

Rules that hold for all of them:
- exact code points (U+FF5C `｜`, U+2581 `▁`); text is never NFKC-normalised, since that would
  turn `｜` into `|` and make exact and degraded markup indistinguishable;
- degraded ASCII look-alikes (`<|DSML|`, `< | DSML | `, `_` for `▁`) count, but are reported as
  degraded in the evidence and the `degraded_markup` column;
- quoted text is blanked (same length, so offsets still point into the original text) before a
  signature looks at it. The markup signatures skip inline code and fenced code, except a fence
  holding exact DSML in a reply where neither the reply nor the user talks about markup: that is a
  call the model fenced, not a quote. The statistical ones (S12-S14) also skip what engineers
  quote: log lines, tracebacks, tables, JSON/YAML, shell output, diffs, hex dumps, ids, paths, URLs
  and unfenced code (`quoted_mask`), so they judge the reply's own prose;
- markup that is visibly talked about ("the `<think>` tag", a quoted `"<result>"`) is not a leak.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import unicodedata
import zlib
from collections import Counter

FW, LB = "\uff5c", "\u2581"  # ｜ and ▁
DSML = f"{FW}DSML{FW}"
BOS, EOS = f"<{FW}begin{LB}of{LB}sentence{FW}>", f"<{FW}end{LB}of{LB}sentence{FW}>"

CLASSES = ("clean", "parse_leak", "incoherent", "empty", "config", "transfer_error")
# 'config' is a deployment verdict and 'transfer_error' a known failure (S5, S16): they
# anchor correlation but are not corruption of an otherwise working reply.
CORRUPTED_CLASSES = ("parse_leak", "incoherent", "empty")


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The defaults of docs/formats/TRANSCRIPTS.md, "Corruption signatures S1-S16"; every one can be changed per run."""

    loop_min_chars: int = 200
    loop_min_copies: int = 8
    loop_max_unit: int = 32
    loop_min_cover: float = 0.30
    zlib_min_chars: int = 500
    zlib_max_ratio: float = 0.15
    line_min_repeats: int = 5
    # a status line ("**Result:** passed") may recur across sections of a long report; a loop
    # dominates the text or repeats back to back
    line_min_share: float = 0.50
    line_min_consecutive: int = 3
    sentence_min_chars: int = 12
    # the same line back to back inside quoted code or logs: a loop, where a pasted log repeats a few times
    quoted_line_min_run: int = 10
    quoted_line_min_chars: int = 12
    # a loop whose unit is longer than 32 chars ("but but but about you about you ...") still has
    # very few distinct words; prose of 30 words has a distinct ratio of 0.5 or more
    words_min: int = 30
    words_max_distinct: float = 0.2
    stutter_min_sites: int = 3
    salad_min_tokens: int = 12
    salad_min_chars: int = 100
    salad_min_share: float = 0.40
    switch_per_100: float = 3.0
    entropy_min_turns: int = 10
    entropy_min_chars: int = 200
    entropy_sigmas: float = 3.0
    # entropy of prose moves by ~0.1-0.2 bit between ordinary replies; a floor keeps a very
    # uniform session from flagging every slightly different reply
    entropy_min_sigma: float = 0.25
    config_min_tool_turns: int = 2


DEFAULT = Thresholds()


@dataclasses.dataclass(frozen=True)
class Hit:
    """Where a signature fired: the signature, the field, the span, and whether markup was degraded."""

    sig: str
    field: str  # 'content' | 'reasoning' | 'tool_calls' | 'meta' | 'error'
    start: int = 0
    end: int = 0
    note: str = ""
    degraded: bool = False


@dataclasses.dataclass(frozen=True)
class Verdict:
    signatures: list[str]
    corruption_class: str
    corrupted: bool
    evidence: str | None
    degraded: bool


# --- text preparation ---------------------------------------------------------------------------
_FENCE = re.compile(r"(?ms)^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$")
_INLINE = re.compile(r"``[^`\n]+``|`[^`\n]+`")
# a tag followed by "tag"/"token"/"marker" or wrapped in quotes is being talked about, not emitted
_DISCUSSED_AFTER = re.compile(r"[ \t]+(?:tags?|tokens?|markers?|delimiters?|blocks?|strings?)\b", re.I)
_QUOTES = "\"'“”‘’「」«»"


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group())


def prose(text: str | None) -> str:
    """`text` with fenced and inline code blanked out, offsets unchanged."""
    if not text:
        return ""
    return _INLINE.sub(_blank, _FENCE.sub(_blank, text))


# --- quoted material ------------------------------------------------------------------------------
# Engineers quote what machines wrote: log lines, tracebacks, tables, hex dumps, diffs, configs,
# shell sessions, paths and ids. Judged as prose, that text is "salad" (short tokens, punctuation),
# has another entropy and switches script; it says nothing about the model's state. The statistics
# of S12-S14 therefore run on the prose left after such material is masked. Masking keys on the
# structure of machine text (a timestamp, a frame, a column layout, an identifier's shape), never
# on how odd a line reads, so salad (which has no structure) stays visible.

# one token shaped like an identifier, path, address, id or measurement
_QUOTED_TOKEN = re.compile(
    # the shapes that start a word share one boundary test, so most positions fail at once
    r"(?<![\w.+:@-])(?:"
    r"""[a-zA-Z][\w+.-]*://[^\s<>"'`]+"""  # URL
    r"|[\w.+-]+@[\w-]+\.[\w.-]+"  # e-mail
    r"|[\w.-]+(?:/[\w.@%+-]+)+/?"  # relative path
    r"|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"  # UUID
    r"|0[xX][0-9a-fA-F]+\b"  # hex literal
    r"|(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b"  # hash, rid
    r"|(?:[0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}\b"  # MAC
    r"|[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7}\b"  # IPv6
    r"|\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"  # IPv4[:port]
    r"|\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?Z?)?\b"  # date[time]
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b"  # time of day
    r"|[\w.:-]+=\S*"  # key=value
    r"|v?\d+(?:\.\d+){1,3}(?:[\w+.-]*\w)?"  # version, decimal
    r"|\w*[A-Za-z]\w*_\w*"  # snake_case
    r"|[A-Za-z_]\w*(?:(?:\.|::)\w+)+(?:\(\))?"  # dotted.name, a::b
    r"|[a-z]{2,}[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*"  # camelCase, PascalCase
    r"|\w+\([^()\s]*\)"  # call()
    r"|[\w-]+(?::\d+)+\b"  # host:port, host:pid:tid
    r"|[a-z]+(?:-[a-z0-9]+)*-\d+\b"  # decode-2
    r")"
    r"|(?:~|\.{1,2})?/[\w.@%+:,=-]+(?:/[\w.@%+:,=-]*)*"  # absolute path (or /health, /dev/shm)
    r"|(?<![\w-])--?[A-Za-z][\w-]*(?:=\S*)?"  # --flag, -x
    r"|\$\{?\w+\}?|%\{\w+\}"  # $VAR, %{var}
)

# a line that is machine output or code by its first characters (after a blockquote '>')
_MACHINE_LINE = re.compile(
    r"(?:"
    r"\[?\d{4}[-/]\d{2}[-/]\d{2}[ T]\d{2}:\d{2}"  # dated log prefix
    r"|\[?\d{2}:\d{2}:\d{2}|\d{2}:\d{2}(?::\d{2})?[.,]\d+\s"  # time prefix
    r"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}"  # glog
    r"|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}"  # syslog
    r"|\[\s*\d+\.\d+\]|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) |\[pid +\d+\]"
    r"|(?:INFO|WARN(?:ING)?|ERROR|DEBUG|TRACE|FATAL|CRITICAL|NOTICE)\b[\s:\]|]"
    r"|Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|During handling of the above"
    r"|The above exception was the direct cause|Caused by:|\.\.\. \d+ more|\^[\^~\s]*$"
    r"|at [\w$.<>/]+\(.*\)\s*$|at \S+ \(\S+:\d+(?::\d+)?\)|at \.?/\S+:\d+"
    r"|#\d+\s+0x[0-9a-fA-F]+|\d+: (?:0x[0-9a-fA-F]+|[\w<>]+::)|@\s+0x[0-9a-fA-F]+|PC: @"
    r"|goroutine \d+ \[|created by |thread '[^']*' panicked at|stack backtrace:|panic: |exit status \d+"
    r"|terminate called|what\(\):|\*\*\* |Thread \d+ \(\w+\)"
    r"|[\w.]*(?:Error|Exception|Exit|Interrupt)\b(?::|$)"
    r"|\$\s+\S|%\s+\w|>>>\s|In \[\d+\]:|❯\s|PS [A-Z]:\\|(?:\([\w.-]+\)\s*)?[\w.-]+@[\w.-]+:\S*\s*[$#]\s"
    r"|diff --git |index [0-9a-f]+\.\.[0-9a-f]+|--- (?:a/|/dev/null)|\+\+\+ (?:b/|/dev/null)|@@ -\d+"
    r"|.*[\u2500-\u257f]|\|.*\|\s*$|[+|][-=+:| ]{3,}[+|]?\s*$|[-=]{3,}(?:[ +|][-=]{3,})+\s*$|\(\d+ rows?\)|\d+ rows? in set"
    r"|[\[{]\s*$|[}\]][,;)]*\s*$|\"[^\"]+\"\s*:|\{.*\"?\w+\"?\s*:.*\}\s*,?\s*$|data: |event: "
    r"|[0-9a-fA-F]{4,16}:?\s+(?:[0-9a-fA-F]{2,4}\s+){3,}"
    r"|[\w.-]+:\d+:\d+ \[\d+\]|[<>*]\s*$|[<>]\s+[\w-]+:\s"
    r"|(?:GET|POST|PUT|DELETE|HEAD|PATCH|OPTIONS) /\S* HTTP/|HTTP/\d(?:\.\d)? \d{3}|\*\s+(?:Trying|Connected|Closing|TLS)"
    r"|# (?:HELP|TYPE) \w|[\w:]+\{[^}]*\}\s+\S+\s*$"
    r"|[dlcbps-][rwxsStT-]{9}[.+@]?\s|total \d"
    r"|(?:def|class|fn|func|function)\s+\w+\s*[(<:{]|from\s+[\w.]+\s+import\s|import\s+[\w.]+(?:\s+as\s+\w+)?\s*;?\s*$"
    r"|(?:if|elif|while|with|for)\b.*[=()\[\].<>!].*:\s*$|(?:if|while|for|switch)\s*\(.*\)\s*\{?\s*$"
    r"|(?:\}\s*)?(?:else|catch|finally)\b.*\{\s*$|(?:return|break|continue|raise|throw)\b.*;?\s*$"
    r"|(?:package|use)\s+[\w.:{}*, ]+;\s*$|#include\b|#define\b|#!/"
    r"|(?:FROM|RUN|ENV|COPY|ADD|ENTRYPOINT|CMD|WORKDIR|ARG|EXPOSE|LABEL|VOLUME)\s+\S"
    r"|(?:SELECT|FROM|WHERE|GROUP BY|ORDER BY|JOIN|LIMIT|INSERT INTO|UPDATE|CREATE TABLE|WITH \w+ AS)\b"
    r"|(?:done|fi|esac|wait|then|do|else)\s*;?\s*$|\w+\(\)\s*\{"
    r"|[\w.\[\]'\"]+\s*(?:[-+*/|&]?=|:=)\s*\S|\[[\w .:\"-]+\]\s*$"
    r")"
)
# code ends with ';', '{' or a line continuation, and has an assignment or a call on the way
_CODE_END = re.compile(r".*[=(].*(?:[;{]|\\)\s*$")
# 'key: value' of YAML, HTTP headers, logs; counts only beside another such line or when indented
_KEY_VALUE = re.compile(r"\s*(?:- )?[\w.\-/\"']+:(?:\s+\S.{0,80})?\s*$")
_LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s")
_BLOCKQUOTE = re.compile(r"\s*(?:>\s?)+")
_GAP = re.compile(r"\S {2,}(?=\S)|\t")
_SENTENCE_END = re.compile(r"[.!?。！？]\s+\S")


def _null(m: re.Match) -> str:
    return re.sub(r"[^\n]", "\x00", m.group())


def _nulls(m: re.Match) -> str:
    return "\x00" * len(m.group())


def _columns(line: str) -> set[int]:
    """Start columns of the fields of an aligned row (text after two or more spaces)."""
    return {m.end() for m in _GAP.finditer(line)}


def _indented(line: str) -> bool:
    return line[:2] == "  " and not _LIST_ITEM.match(line)


def _machine_rows(lines: list[str]) -> list[bool]:
    """Which lines are machine output or code, by shape and by the block they sit in."""
    n = len(lines)
    body = []
    for ln in lines:
        q = _BLOCKQUOTE.match(ln)
        body.append(ln[q.end() :] if q and q.group().strip() else ln)
    out = [False] * n
    kv = [False] * n
    cols = [_columns(ln.rstrip()) for ln in body]
    for i, ln in enumerate(body):
        s = ln.strip()
        if not s:
            continue
        if not s.strip("\x00") or ln[:1] == "\t" or ln.startswith("    ") and not _LIST_ITEM.match(ln):
            out[i] = True
        elif _MACHINE_LINE.match(s) or _CODE_END.match(s):
            out[i] = True
        elif len(cols[i]) >= 2 and ((i and cols[i - 1] & cols[i]) or (i + 1 < n and cols[i + 1] & cols[i])):
            # an aligned table (kubectl, df, ps, benchmark columns): fields start at shared columns
            out[i] = True
        elif _KEY_VALUE.match(ln):
            kv[i] = True
    # key: value lines and CSV rows come in blocks; a lone "Note: ..." is prose
    for i in range(n):
        if kv[i] and (
            _indented(body[i])
            or (i and (kv[i - 1] or out[i - 1]) and body[i - 1].strip())
            or (i + 1 < n and (kv[i + 1] or out[i + 1]) and body[i + 1].strip())
        ):
            out[i] = True
        c = body[i].count(",")
        if (
            not out[i]
            and c >= 2
            and not _SENTENCE_END.search(body[i])
            and len(body[i]) / (c + 1) <= 20
            and any(0 <= j < n and body[j].count(",") == c for j in (i - 1, i + 1))
        ):
            out[i] = True
    # a diff hunk: context and changed lines after a diff header
    hunk = False
    for i, ln in enumerate(body):
        if out[i] and re.match(r"\s*(?:@@ -\d|diff --git|--- |\+\+\+ )", ln):
            hunk = True
        elif hunk and ln[:1] in (" ", "+", "-", "\\") and ln.strip():
            out[i] = True
        else:
            hunk = False
    return out


_STRAY = re.compile(
    r"(?m)(?<=\x00)[^\w\n\x00]+(?=\x00|$)|^[^\w\n\x00]+(?=\x00)"
    r"|(?<=\x00)[^\w\s\x00]+|[^\w\s\x00]+(?=\x00)"
)


@functools.lru_cache(maxsize=256)
def _masked_blocks(text: str) -> str:
    out = _INLINE.sub(_null, _FENCE.sub(_null, text))
    lines = out.split("\n")
    rows = _machine_rows(lines)
    return "\n".join("\x00" * len(ln) if machine else ln for ln, machine in zip(lines, rows))


def quoted_mask(text: str | None, tokens: bool = True) -> str:
    """`text` with quoted machine material (code, logs, tables, ids, paths, ...) blanked, offsets unchanged.

    With `tokens=False` only whole quotes (code, machine lines) are blanked and the ids, paths and
    identifiers inside prose stay: a loop of `I'll write()` is a loop of that whole unit.
    """
    if not text:
        return ""
    out = _masked_blocks(text)
    if tokens:
        out = _QUOTED_TOKEN.sub(_nulls, out)
        # the commas, colons and brackets between two masked tokens belong to the quote
        out = _STRAY.sub(_nulls, out)
    return out.replace("\x00", " ")


def _emitted(text: str, m: re.Match) -> bool:
    """False when the markup at `m` is quoted or named as a tag in prose."""
    before = text[m.start() - 1] if m.start() > 0 else ""
    after = text[m.end()] if m.end() < len(text) else ""
    if before in _QUOTES and after in _QUOTES:
        return False
    return not _DISCUSSED_AFTER.match(text, m.end())


def _find(pattern: re.Pattern, text: str) -> re.Match | None:
    for m in pattern.finditer(text):
        if _emitted(text, m):
            return m
    return None


def _count(pattern: re.Pattern, text: str) -> int:
    return sum(1 for m in pattern.finditer(text) if _emitted(text, m))


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
ERROR_BODY = re.compile(
    r"KVTransferError|Decode transfer failed|Prefill transfer failed|bootstrap_room mismatch"
    r"|KVPoll\.WaitingForInput"
)


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


def _has_tools(turn) -> bool:
    return bool(turn.offered_tools) or bool(turn.tools_offered)


def s9_all_reasoning(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S9 ALL_REASONING: tools offered, finish `stop`, nothing visible and no call, everything in `reasoning`."""
    if (
        _has_tools(turn)
        and not (turn.content or "").strip()
        and not turn.tool_calls
        and (turn.reasoning or "").strip()
        and turn.finish_reason == "stop"
    ):
        return Hit("S9", "reasoning", 0, min(len(turn.reasoning), 80), "content empty, reasoning only")
    return None


def s10_finish_mismatch(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S10 FINISH_MISMATCH: `tool_calls` finish with no call, or `stop` while S1, S3 or S4 fires."""
    if turn.finish_reason == "tool_calls" and not turn.tool_calls:
        return Hit("S10", "meta", note="finish_reason tool_calls, no tool call")
    if turn.finish_reason == "stop":
        inner = s1_dsml_in_content(turn, th) or s3_unbalanced_dsml(turn, th) or s4_bare_invoke(turn, th)
        if inner:
            return dataclasses.replace(inner, sig="S10", note=f"finish_reason stop while {inner.sig} fires")
    return None


def _loads(args) -> tuple[object, str | None]:
    if isinstance(args, (dict, list)):
        return args, None
    if args is None or args == "":
        return {}, None
    try:
        return json.loads(args), None
    except (TypeError, ValueError) as e:
        return None, str(e)


def s11_bad_tool_args(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S11 BAD_TOOL_ARGS: arguments that are not JSON, an unknown tool name, or missing required keys."""
    offered = {o["name"]: o for o in (turn.offered_tools or []) if o.get("name")}
    for i, call in enumerate(turn.tool_calls):
        args, err = _loads(call.get("arguments"))
        if err is not None:
            return Hit("S11", "tool_calls", note=f"call {i} {call.get('name')}: arguments not JSON ({err})")
        if offered and call.get("name") not in offered:
            return Hit("S11", "tool_calls", note=f"call {i}: {call.get('name')!r} is not an offered tool")
        required = (offered.get(call.get("name")) or {}).get("required") or []
        missing = [k for k in required if not isinstance(args, dict) or k not in args]
        if missing:
            return Hit("S11", "tool_calls", note=f"call {i} {call.get('name')}: missing {', '.join(missing)}")
    return None


# Lines that are markup (evidence for other signatures) are left out of the degeneration checks
# S12-S14; tables and other quoted material are masked before (see `quoted_mask`).
_RE_SKIP_LINE = re.compile(r"^\s*(?:<[/]?\s*[|｜]{1,2}\s*DSML.*|</?\s*[|｜].*[|｜]\s*>.*)\s*$")
_RUN_OF_SPACES = re.compile(r"[ \t]{2,}")


@functools.lru_cache(maxsize=512)
def _degeneration_text(content: str, reasoning: str, tokens: bool) -> str:
    parts = []
    for text in (content, reasoning):
        lines = (_RUN_OF_SPACES.sub(" ", ln).strip() for ln in quoted_mask(text, tokens).split("\n"))
        parts.append("\n".join(ln for ln in lines if ln and not _RE_SKIP_LINE.match(ln)))
    return "\n".join(p for p in parts if p.strip())


def degeneration_text(turn, tokens: bool = True) -> str:
    """`content` + `reasoning` without quoted material and markup lines, one space between words: the input of S12-S14.

    S12 reads it with `tokens=False` (see `quoted_mask`).
    """
    return _degeneration_text(turn.content or "", turn.reasoning or "", tokens)


_RE_LOOP = re.compile(r"(.{1,32}?)\1{7,}", re.S)
_RE_SENTENCE_END = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_RE_LINE_RUN = re.compile(r"(?m)^([^\n]+)(?:\n\1$)+")
_RE_TRIVIAL_UNIT = re.compile(r"^[\s\-=_*#|.·•]*$")


def _field_span(turn, snippet: str) -> tuple[str, int, int]:
    """Where `snippet` of the degeneration text lies in the original field."""
    for f in ("content", "reasoning"):
        i = (getattr(turn, f) or "").find(snippet)
        if i >= 0:
            return f, i, i + len(snippet)
    # the degeneration text has one space where the original had several, or quoted material
    words = snippet.split()
    if words:
        pat = re.compile(r"\s+".join(map(re.escape, words)))
        for probe in (pat, re.compile(re.escape(max(words, key=len)))):
            for f in ("content", "reasoning"):
                m = probe.search(getattr(turn, f) or "")
                if m:
                    return f, m.start(), m.end()
    return "content", 0, 0


def s12_repetition_loop(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S12 REPETITION_LOOP: a unit repeated back to back over much of the text, very low zlib ratio, or a looping line."""
    # the unit of a loop is looked for with the identifiers in prose kept ("I'll write() I'll write() ...")
    whole = degeneration_text(turn, tokens=False)
    if len(whole) >= th.loop_min_chars:
        pat = (
            _RE_LOOP
            if (th.loop_max_unit, th.loop_min_copies) == (32, 8)
            else re.compile(f"(.{{1,{th.loop_max_unit}}}?)\\1{{{th.loop_min_copies - 1},}}", re.S)
        )
        best = None
        for m in pat.finditer(whole):
            if _RE_TRIVIAL_UNIT.match(m.group(1)):
                continue
            if best is None or len(m.group()) > len(best.group()):
                best = m
        if best is not None and len(best.group()) >= th.loop_min_cover * len(whole):
            f, s, e = _field_span(turn, best.group()[:64])
            return Hit("S12", f, s, e, f"{len(best.group()) // len(best.group(1))} copies of {best.group(1)!r}")
    text = degeneration_text(turn)
    n = len(text)
    if n >= th.zlib_min_chars:
        raw = text.encode()
        ratio = len(zlib.compress(raw, 9)) / len(raw)
        if ratio < th.zlib_max_ratio:
            return Hit("S12", "content", 0, 60, f"zlib ratio {ratio:.3f}")
    words = re.findall(r"\w+", text.lower())
    if len(words) >= th.words_min and len(set(words)) / len(words) < th.words_max_distinct:
        f, s, e = _field_span(turn, text.strip()[:40])
        return Hit("S12", f, s, e, f"{len(set(words))} distinct words in {len(words)}")
    # stutter: a word three times running ("server server server"), at several places
    stutters = [
        i
        for i in range(2, len(words))
        if words[i] == words[i - 1] == words[i - 2] and (i < 3 or words[i - 3] != words[i])
    ]
    if len(stutters) >= th.stutter_min_sites:
        f, s, e = _field_span(turn, text.strip()[:40])
        return Hit("S12", f, s, e, f"{len(stutters)} words stuttered three times")
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    counts = Counter(ln for ln in lines if len(ln) >= 4 and re.search(r"\w", ln))
    if counts:
        line, k = counts.most_common(1)[0]
        if k >= th.line_min_repeats:
            run = best_run = 0
            for ln in lines:
                run = run + 1 if ln == line else 0
                best_run = max(best_run, run)
            if k / len(lines) >= th.line_min_share or best_run >= th.line_min_consecutive:
                f, s, e = _field_span(turn, line)
                return Hit("S12", f, s, e, f"line repeated {k} times")
    # a sentence looping back to back, longer than the 32-char unit above ("The cache was never sent. " ...)
    run, prev = 0, None
    for m in _RE_SENTENCE_END.finditer(text):
        sent = m.group().strip()
        run = run + 1 if sent == prev else 1
        prev = sent
        if run >= th.line_min_repeats and len(sent) >= th.sentence_min_chars:
            f, s, e = _field_span(turn, sent)
            return Hit("S12", f, s, e, f"sentence repeated {run} times back to back")
    # Quoted material is masked above, since logs and tables repeat lines; but a model that loops
    # inside code writes the same line again and again, which no quoted log does for long.
    for f in ("content", "reasoning"):
        for m in _RE_LINE_RUN.finditer(getattr(turn, f) or ""):
            if len(m.group(1).strip()) >= th.quoted_line_min_chars and re.search(r"[^\W\d_]", m.group(1)):
                n_copies = m.group().count("\n") + 1
                if n_copies >= th.quoted_line_min_run:
                    return Hit(
                        "S12", f, m.start(), m.start() + len(m.group(1)), f"line repeated {n_copies} times back to back"
                    )
    return None


def script_of(ch: str) -> str | None:
    """Coarse script of a letter: 'cjk', 'latin', 'cyrillic', 'greek', 'arabic', 'hebrew', 'other', None if not a letter."""
    o = ord(ch)
    if (
        0x4E00 <= o <= 0x9FFF
        or 0x3400 <= o <= 0x4DBF
        or 0x3040 <= o <= 0x30FF
        or 0xAC00 <= o <= 0xD7AF
        or 0x20000 <= o <= 0x2FA1F
        or 0xF900 <= o <= 0xFAFF
    ):
        return "cjk"
    if not ch.isalpha():
        return None
    if o < 0x250 or 0x1E00 <= o <= 0x1EFF:
        return "latin"
    name = unicodedata.name(ch, "")
    for s in ("CYRILLIC", "GREEK", "ARABIC", "HEBREW"):
        if name.startswith(s):
            return s.lower()
    return "other"


_RE_ASCII_LETTER = re.compile(r"[A-Za-z]")
_RE_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]")
_RE_OTHER_CHAR = re.compile(
    r"[^\x00-\x7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)


@functools.lru_cache(maxsize=256)
def _script_counts(text: str) -> Counter:
    # ASCII letters and CJK are counted by regex; only the rest needs a look at each character
    c = Counter(s for s in map(script_of, _RE_OTHER_CHAR.findall(text)) if s)
    for script, pat in (("latin", _RE_ASCII_LETTER), ("cjk", _RE_CJK_CHAR)):
        k = len(pat.findall(text))
        if k:
            c[script] += k
    return c


def _dominant(text: str) -> str | None:
    c = Counter(_script_counts(text))
    # CJK characters carry a word each, Latin letters a fifth of one: weigh them alike
    c["cjk"] *= 4
    return c.most_common(1)[0][0] if c else None


_RE_SENTENCE = re.compile(r"[^.!?。！？\n]+")
_RE_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]{2,}")
# CJK carries a word in two characters; other scripts need four letters, so that units and math
# (μs, Δt, αβ) are not a switch
_RE_FOREIGN_RUN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]{2,}"
    r"|[\u0400-\u04ff]{4,}|[\u0370-\u03ff]{4,}|[\u0590-\u05ff]{4,}|[\u0600-\u06ff]{4,}"
)
_RE_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
_STOPWORDS = frozenset("the of and to is be by for with that this are was it on as in at from or not".split())
_OPENERS, _CLOSERS = "\"'“‘「『(（[【《<", "\"'”’」』)）]】》>"


def s13_script_switch(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S13 SCRIPT_SWITCH: CJK (or Cyrillic, Greek, ...) inside a Latin sentence, English phrasing inside a CJK one, or churn.

    A CJK reply that names Latin terms (`使用 Python 的 requests 库`) is ordinary: only a run of
    English function words counts as a switch there. Quoted or bracketed runs are citations.
    """
    text = degeneration_text(turn)
    if not text.strip():
        return None
    dom = _dominant(text)
    user_dom = _dominant(turn.user_text or "") if turn.user_text else None
    for sm in _RE_SENTENCE.finditer(text):
        sent = sm.group()
        if dom == "latin" and user_dom in (None, "latin") and len(_RE_LATIN_WORD.findall(sent)) >= 2:
            for m in _RE_FOREIGN_RUN.finditer(sent):
                before, after = sent[: m.start()].rstrip(), sent[m.end() :].lstrip()
                if (before and before[-1] in _OPENERS) or (after and after[0] in _CLOSERS):
                    continue
                if _RE_LATIN_WORD.search(before[-20:]) or _RE_LATIN_WORD.match(after):
                    s = sm.start() + m.start()
                    f, fs, fe = _field_span(turn, text[s : s + len(m.group())])
                    return Hit("S13", f, fs, fe, f"{script_of(m.group()[0])} inside a Latin sentence")
        if dom == "cjk" and user_dom in (None, "cjk") and _RE_CJK_RUN.search(sent):
            for m in re.finditer(r"(?:[A-Za-z]{2,}[ ,]+){3,}[A-Za-z]{2,}", sent):
                if m.start() and sent[m.start() - 1] in _OPENERS:
                    continue
                words = [w.lower() for w in _RE_LATIN_WORD.findall(m.group())]
                if sum(w in _STOPWORDS for w in words) >= 2:
                    s = sm.start() + m.start()
                    f, fs, fe = _field_span(turn, text[s : s + len(m.group())])
                    return Hit("S13", f, fs, fe, "English phrasing inside a CJK sentence")
    # churn among three or more scripts; two-script CJK/Latin prose changes script all the time
    if len(_script_counts(text)) >= 3:
        letters = [(i, s) for i, s in ((i, script_of(c)) for i, c in enumerate(text)) if s]
        changes = [letters[k][0] for k in range(1, len(letters)) if letters[k][1] != letters[k - 1][1]]
        for k in range(len(changes)):
            j = k
            while j + 1 < len(changes) and changes[j + 1] - changes[k] <= 100:
                j += 1
            if j - k + 1 >= th.switch_per_100 + 1 and len({script_of(text[c]) for c in changes[k : j + 1]}) >= 3:
                f, fs, fe = _field_span(turn, text[changes[k] : changes[k] + 20])
                return Hit("S13", f, fs, fe, f"{j - k + 1} script changes in 100 chars")
    return None


_SHORT_WORDS = frozenset(
    "a i o an am as at be by do go he if in is it me my no of oh ok on or so to up us we ye vs eg ie id pr ci ui io"
    " os db ml ai v1 v2 v3 v4 el la le de du en et un je tu il ce da di ne se si".split()
)
_RE_MARKER = re.compile(
    r"^(?:[-*+>#]+|\d+[.)]|[a-z][.)]|\[[ x]\]|&|=|->|=>|—|–|/|\d+(?:[.,:]\d+)+%?|\d+%|[$€£]\d[\d.,]*)$", re.I
)
# a count or a measurement ("rank 3", "24,", "(776 lines)", "300s") is a word of technical prose; a bracketed
# number ("[3]") is not, since degenerate numbering ("1. [1]  1. [2] ...") is made of them
_RE_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?(?:ms|us|µs|ns|s|m|h|d|k|K|M|G|T|B|KB|MB|GB|TB|KiB|MiB|GiB|W|C|x|%)?$")
C0 = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffd]")


# a dash or slash standing alone inside a line is a stray vocabulary token; at the start of a line
# it is a list marker
_MID_LINE_STRAYS = frozenset("-/")


@functools.lru_cache(maxsize=4096)
def _salad_token(tok: str, line_start: bool = False) -> float:
    """How much a token counts towards S14's share: 1 for a short non-word, a third for a short common word.

    Counting every 1-2 char token alike would not do: ordinary English is full of short words
    (`it is up to us`). At a third, a window of nothing but short common words stays under the 40%
    threshold, so only vocabulary
    fragments mixed in with them (`a of Q e / it x , to`) can carry a window over it.
    """
    if tok in _MID_LINE_STRAYS and not line_start:
        return 1.0
    core = tok.strip("()[]{}\"'“”‘’*_,.;:!?")
    if _RE_MARKER.match(tok) or _RE_MARKER.match(core):
        return 0.0
    if not core:
        return 1.0
    if _RE_NUMBER.match(tok.lstrip("(").rstrip(",.;:)")):
        return 0.0
    if len(core) <= 2:
        return 1 / 3 if core.lower() in _SHORT_WORDS else 1.0
    return 0.0 if any(c.isalpha() for c in core) else 1.0


def s14_token_salad(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S14 TOKEN_SALAD: U+FFFD / C0 controls, or a window where short non-words dominate.

    Counting every 1-2 char token alike would flag ordinary English (`it is up to us`), list markers
    and numbers; short common words, markers and numbers are not counted.
    The entropy rule needs a session baseline: see `entropy_outliers`.
    """
    for f in ("content", "reasoning"):
        raw = getattr(turn, f) or ""
        m = C0.search(raw)
        if m:
            return Hit("S14", f, m.start(), m.end(), f"U+{ord(m.group()):04X} in the text")
    text = degeneration_text(turn)
    toks = [(m.start(), m.group()) for m in re.finditer(r"\S+", text)]
    # a token is at a line start when only whitespace with a newline lies between it and the one before
    ends = [0] + [p + len(t) for p, t in toks[:-1]]
    flags = [_salad_token(t, e == 0 or "\n" in text[e:p]) for (p, t), e in zip(toks, ends)]
    j = 0
    for i in range(len(toks)):
        # the shortest run of tokens from i that spans the window
        j = max(j, i)
        while j < len(toks) and toks[j][0] + len(toks[j][1]) - toks[i][0] < th.salad_min_chars:
            j += 1
        if j >= len(toks):
            break
        n = j - i + 1
        if n >= th.salad_min_tokens and sum(flags[i : j + 1]) / n >= th.salad_min_share:
            f, s, e = _field_span(turn, text[toks[i][0] : toks[i][0] + 60])
            return Hit("S14", f, s, e, f"{sum(flags[i : j + 1]) / n:.0%} short or non-word tokens")
    return None


def char_entropy(text: str) -> float:
    """Shannon entropy of the characters of `text`, bits per character."""
    c = Counter(text)
    n = sum(c.values())
    return -sum(k / n * math.log2(k / n) for k in c.values()) if n else 0.0


def entropy_outliers(turns, th: Thresholds = DEFAULT) -> dict[int, Hit]:
    """S14 session rule: turns whose character entropy lies outside the session mean ± 3σ.

    Only prose of the session's dominant script is compared (a Chinese reply in an English
    session has a different entropy and is not salad), each turn against the others.
    """
    texts = [degeneration_text(t) for t in turns]
    doms = [_dominant(x) for x in texts]
    main = Counter(d for d in doms if d).most_common(1)
    if not main:
        return {}
    elig = [i for i, x in enumerate(texts) if len(x) >= th.entropy_min_chars and doms[i] == main[0][0]]
    if len(elig) < th.entropy_min_turns + 1:
        return {}
    ent = {i: char_entropy(texts[i]) for i in elig}
    out = {}
    for i in elig:
        others = [ent[j] for j in elig if j != i]
        mean = sum(others) / len(others)
        sd = max(th.entropy_min_sigma, (sum((e - mean) ** 2 for e in others) / len(others)) ** 0.5)
        if abs(ent[i] - mean) > th.entropy_sigmas * sd:
            out[i] = Hit("S14", "content", 0, 60, f"entropy {ent[i]:.2f} bit/char vs session {mean:.2f}±{sd:.2f}")
    return out


def s15_empty_turn(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S15 EMPTY_TURN: finish `stop`, no content, no call, yet tokens were generated.

    A source with no metadata at all (a generated-outputs folder) has only the text: an empty
    output there is an empty turn too.
    """
    if (turn.content or "").strip() or turn.tool_calls:
        return None
    if turn.finish_reason == "stop" and (turn.completion_tokens or 0) > 0:
        return Hit("S15", "content", note=f"finish stop, {turn.completion_tokens} completion tokens, nothing returned")
    if (
        turn.finish_reason is None
        and turn.completion_tokens is None
        and turn.http_status is None
        and not (turn.reasoning or "").strip()
        and not turn.error_text
    ):
        return Hit("S15", "content", note="empty output")
    return None


def s16_transfer_error_turn(turn, th: Thresholds = DEFAULT) -> Hit | None:
    """S16 TRANSFER_ERROR_TURN: HTTP 500, a KV-transfer error body, or finish `abort`."""
    if turn.error_text:
        m = ERROR_BODY.search(turn.error_text)
        if m:
            return Hit("S16", "error", m.start(), m.end())
    if turn.http_status == 500:
        return Hit("S16", "error", 0, min(len(turn.error_text or ""), 80), "HTTP 500")
    if turn.finish_reason == "abort":
        return Hit("S16", "meta", note="finish_reason abort")
    return None


SIGNATURES = {
    "S1": s1_dsml_in_content,
    "S2": s2_dsml_in_reasoning,
    "S3": s3_unbalanced_dsml,
    "S4": s4_bare_invoke,
    "S5": s5_wrong_dialect,
    "S6": s6_malformed_param,
    "S7": s7_special_token_leak,
    "S8": s8_think_tag_leak,
    "S9": s9_all_reasoning,
    "S10": s10_finish_mismatch,
    "S11": s11_bad_tool_args,
    "S12": s12_repetition_loop,
    "S13": s13_script_switch,
    "S14": s14_token_salad,
    "S15": s15_empty_turn,
    "S16": s16_transfer_error_turn,
}

LEAK = ("S1", "S2", "S3", "S4", "S5", "S6", "S10", "S11")
DEGENERATE = ("S12", "S13", "S14")


def detect(turn, th: Thresholds = DEFAULT) -> dict[str, Hit]:
    """Every signature that fires on one turn (without the session rules)."""
    out = {}
    for sig, fn in SIGNATURES.items():
        h = fn(turn, th)
        if h is not None:
            out[sig] = h
    return out


def _is_leak(hits: dict[str, Hit]) -> bool:
    s7 = hits.get("S7")
    return any(s in hits for s in LEAK) or bool(s7 and "tool token" in s7.note)


def _class(hits: dict[str, Hit]) -> tuple[str, list[str]]:
    """Class of a turn and the signatures that decided it, by precedence."""
    if "S16" in hits:
        return "transfer_error", ["S16"]
    if "S5" in hits:
        return "config", ["S5"]
    degenerate = [s for s in DEGENERATE if s in hits]
    if degenerate:
        # the closest tie to corrupted KV: markup mixed into salad is salad
        return "incoherent", degenerate
    if _is_leak(hits):
        return "parse_leak", [s for s in hits if s in LEAK or s == "S7"]
    if "S7" in hits or "S8" in hits:
        return "incoherent", [s for s in ("S7", "S8") if s in hits]
    if "S15" in hits or "S9" in hits:
        return "empty", [s for s in ("S15", "S9") if s in hits]
    return "clean", []


def assess_session(turns, th: Thresholds = DEFAULT) -> list[Verdict]:
    """Signatures, class and evidence of every turn of one session (turns in time order)."""
    hits = [detect(t, th) for t in turns]
    for i, h in entropy_outliers(turns, th).items():
        hits[i].setdefault("S14", h)
    classes = [_class(h) for h in hits]
    # A template / parser mismatch hits every tool call from the first request on; a leak that
    # follows load hits some calls of a session that otherwise works (docs/formats/TRANSCRIPTS.md,
    # "How markup leaks into content").
    tool_turns = [i for i, t in enumerate(turns) if t.tool_calls or _is_leak(hits[i])]
    if len(tool_turns) >= th.config_min_tool_turns and all(
        _is_leak(hits[i]) and not turns[i].tool_calls for i in tool_turns
    ):
        for i in tool_turns:
            if classes[i][0] == "parse_leak":
                classes[i] = ("config", classes[i][1])
    out = []
    for t, h, (cls, deciding) in zip(turns, hits, classes):
        sigs = sorted(h, key=lambda s: int(s[1:]))
        out.append(
            Verdict(
                sigs,
                cls,
                cls in CORRUPTED_CLASSES,
                evidence(t, h, deciding) if h else None,
                any(x.degraded for x in h.values()),
            )
        )
    return out


def evidence(turn, hits: dict[str, Hit], deciding: list[str], width: int = 40) -> str:
    """A snippet around the first deciding match (between ⟦ and ⟧) plus the other signatures' notes.

    Control characters are escaped; newlines read as \\n so the evidence stays one line.
    """
    from forensics.core.text import escape_control

    def esc(s: str) -> str:
        return escape_control(s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))

    parts, shown = [], False
    for sig in (deciding or list(hits))[:4]:
        h = hits[sig]
        label = sig + (" degraded" if h.degraded else "")
        src = {"content": turn.content, "reasoning": turn.reasoning, "error": turn.error_text}.get(h.field) or ""
        note = f" ({esc(h.note)})" if h.note else ""
        if not shown and h.end > h.start and src:
            a, b = max(0, h.start - width), min(len(src), h.end + width)
            snippet = (
                ("…" if a else "")
                + esc(src[a : h.start])
                + "⟦"
                + esc(src[h.start : min(h.end, h.start + 80)])
                + "⟧"
                + esc(src[h.end : b])
                + ("…" if b < len(src) else "")
            )
            parts.append(f"{label} {h.field}: {snippet}{note}")
            shown = True
        else:
            parts.append(f"{label}{note}")
    return " · ".join(parts)
