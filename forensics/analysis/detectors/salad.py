"""S14 TOKEN_SALAD: control characters, windows of short non-words, and the session entropy rule."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from forensics.analysis.detectors.base import DEFAULT, Hit, Thresholds
from forensics.analysis.detectors.quoting import _field_span, degeneration_text
from forensics.analysis.detectors.scripts import _dominant

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
