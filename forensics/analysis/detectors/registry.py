"""The signatures by name, the class a turn's hits give, and the verdicts of one session."""

from __future__ import annotations

import dataclasses

from forensics.analysis.detectors.base import CORRUPTED_CLASSES, DEFAULT, Hit, Thresholds, Verdict
from forensics.analysis.detectors.markup import (
    s1_dsml_in_content,
    s2_dsml_in_reasoning,
    s3_unbalanced_dsml,
    s4_bare_invoke,
    s5_wrong_dialect,
    s6_malformed_param,
    s7_special_token_leak,
    s8_think_tag_leak,
)
from forensics.analysis.detectors.meta import (
    s9_all_reasoning,
    s10_finish_mismatch,
    s11_bad_tool_args,
    s15_empty_turn,
    s16_transfer_error_turn,
)
from forensics.analysis.detectors.repetition import s12_repetition_loop
from forensics.analysis.detectors.salad import entropy_outliers, s14_token_salad
from forensics.analysis.detectors.scripts import s13_script_switch

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
    out = []
    for t, h, (cls, deciding) in zip(turns, *_assessed(turns, th)):
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


def session_excerpts(turns, th: Thresholds = DEFAULT) -> list["Excerpt | None"]:
    """The evidence of every turn of one session as `assess_session` gives it, before it is cut."""
    return [evidence_parts(t, h, deciding) if h else None for t, h, (_, deciding) in zip(turns, *_assessed(turns, th))]


def _assessed(turns, th: Thresholds) -> tuple[list[dict[str, Hit]], list[tuple[str, list[str]]]]:
    """Each turn's hits, and its class with the signatures that decided it, with the session rules."""
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
    return hits, classes


def evidence(turn, hits: dict[str, Hit], deciding: list[str], width: int = 40) -> str:
    """A snippet around the first deciding match (between ⟦ and ⟧) plus the other signatures' notes.

    Control characters are escaped; newlines read as \\n so the evidence stays one line.
    """
    return evidence_parts(turn, hits, deciding, width).text()


@dataclasses.dataclass(frozen=True)
class Excerpt:
    """A reply's evidence before it is cut: `head`, the snippet of `source[start:end]` with `width`
    characters around it, `tail`. A masking masks `source` whole and cuts the snippet after it."""

    head: str
    source: str = ""
    start: int = 0
    end: int = 0
    width: int = 40
    tail: str = ""

    def text(self, source: str | None = None, start: int | None = None, end: int | None = None) -> str:
        """The evidence as stored; with `source`, `start` and `end` given, cut from that text instead."""
        if source is None:
            source, start, end = self.source, self.start, self.end
        if end <= start or not source:
            return self.head + self.tail
        return self.head + snippet(source, start, end, self.width) + self.tail


def esc(s: str) -> str:
    """Evidence text on one line: backslashes doubled, line breaks and tabs as escapes, control characters visible."""
    from forensics.core.text import escape_control

    return escape_control(s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))


def snippet(src: str, start: int, end: int, width: int = 40) -> str:
    """`src[start:end]` between ⟦ and ⟧ (at most 80 characters of it), `width` characters either side."""
    a, b = max(0, start - width), min(len(src), end + width)
    return (
        ("…" if a else "")
        + esc(src[a:start])
        + "⟦"
        + esc(src[start : min(end, start + 80)])
        + "⟧"
        + esc(src[end:b])
        + ("…" if b < len(src) else "")
    )


def evidence_parts(turn, hits: dict[str, Hit], deciding: list[str], width: int = 40) -> Excerpt:
    """The evidence of `evidence` as an Excerpt: what comes before the snippet, its source and span, what follows."""
    parts, cut = [], None
    for sig in (deciding or list(hits))[:4]:
        h = hits[sig]
        label = sig + (" degraded" if h.degraded else "")
        src = {"content": turn.content, "reasoning": turn.reasoning, "error": turn.error_text}.get(h.field) or ""
        note = f" ({esc(h.note)})" if h.note else ""
        if cut is None and h.end > h.start and src:
            cut = (len(parts), src, h.start, h.end)
            parts.append((f"{label} {h.field}: ", note))
        else:
            parts.append((f"{label}{note}", ""))
    joined = [p + q for p, q in parts]
    if cut is None:
        return Excerpt(" · ".join(joined))
    i, src, start, end = cut
    head = " · ".join(joined[:i] + [""]) + parts[i][0]
    tail = parts[i][1] + "".join(" · " + p for p in joined[i + 1 :])
    return Excerpt(head, src, start, end, width, tail)
