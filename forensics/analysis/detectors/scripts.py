"""S13 SCRIPT_SWITCH: a reply that changes writing system mid-sentence, and the script counts it reads."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

from forensics.analysis.detectors.base import DEFAULT, Hit, Thresholds
from forensics.analysis.detectors.quoting import _field_span, degeneration_text


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
