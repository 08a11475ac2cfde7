"""What the signatures read: quoted code and machine text blanked, offsets into the original kept.

The markup signatures read `prose` (code blanked); the statistical ones (S12-S14) read
`degeneration_text`, built on `quoted_mask`; `_emitted` tells markup that is written from markup
that is talked about.
"""

from __future__ import annotations

import functools
import re

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
