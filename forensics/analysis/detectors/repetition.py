"""S12 REPETITION_LOOP: a reply that repeats itself."""

from __future__ import annotations

import re
import zlib
from collections import Counter

from forensics.analysis.detectors.base import DEFAULT, Hit, Thresholds
from forensics.analysis.detectors.quoting import _field_span, degeneration_text

_RE_LOOP = re.compile(r"(.{1,32}?)\1{7,}", re.S)
_RE_SENTENCE_END = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_RE_LINE_RUN = re.compile(r"(?m)^([^\n]+)(?:\n\1$)+")
_RE_TRIVIAL_UNIT = re.compile(r"^[\s\-=_*#|.·•]*$")


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
