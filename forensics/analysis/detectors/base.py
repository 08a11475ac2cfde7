"""What every signature shares: the markup code points, the classes, the thresholds, Hit and Verdict."""

from __future__ import annotations

import dataclasses

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
