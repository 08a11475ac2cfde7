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

One module per family, each importing only `base` and `quoting` (and what it builds on):
`base` (code points, classes, thresholds, Hit, Verdict), `quoting` (what the signatures read),
`markup` (S1-S8), `meta` (S9-S11, S15, S16), `repetition` (S12), `scripts` (S13), `salad` (S14 and
the session entropy rule), `registry` (SIGNATURES, the class precedence, `assess_session`). This
package is the public surface: import from `forensics.analysis.detectors`, not from a module.
"""

from __future__ import annotations

from forensics.analysis.detectors.base import (
    BOS,
    CLASSES,
    CORRUPTED_CLASSES,
    DEFAULT,
    DSML,
    EOS,
    FW,
    LB,
    Hit,
    Thresholds,
    Verdict,
)
from forensics.analysis.detectors.markup import (
    RE_DSML,
    RE_DSML_DEGRADED,
    RE_INVOKE_CLOSE,
    RE_INVOKE_OPEN,
    RE_PARAM_CLOSE,
    RE_PARAM_OPEN,
    RE_PARAM_TAG,
    RE_PLAIN_PARAM,
    RE_SPECIAL,
    RE_SPECIAL_DEGRADED,
    RE_THINK,
    RE_THINK_CLOSE,
    RE_V3_TOOL,
    RE_WRAPPER_CLOSE,
    RE_WRAPPER_OPEN,
    expected_dialect,
    markup_text,
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
    ERROR_BODY,
    s9_all_reasoning,
    s10_finish_mismatch,
    s11_bad_tool_args,
    s15_empty_turn,
    s16_transfer_error_turn,
)
from forensics.analysis.detectors.quoting import (
    degeneration_text,
    prose,
    quoted_mask,
)
from forensics.analysis.detectors.registry import (
    DEGENERATE,
    LEAK,
    SIGNATURES,
    Excerpt,
    assess_session,
    detect,
    esc,
    evidence,
    session_excerpts,
)
from forensics.analysis.detectors.repetition import (
    s12_repetition_loop,
)
from forensics.analysis.detectors.salad import (
    C0,
    char_entropy,
    entropy_outliers,
    s14_token_salad,
)
from forensics.analysis.detectors.scripts import (
    s13_script_switch,
    script_of,
)

__all__ = [
    "Excerpt",
    "esc",
    "session_excerpts",
    "FW",
    "LB",
    "DSML",
    "BOS",
    "EOS",
    "CLASSES",
    "CORRUPTED_CLASSES",
    "Thresholds",
    "DEFAULT",
    "Hit",
    "Verdict",
    "prose",
    "quoted_mask",
    "degeneration_text",
    "RE_DSML",
    "RE_DSML_DEGRADED",
    "RE_WRAPPER_OPEN",
    "RE_WRAPPER_CLOSE",
    "RE_INVOKE_OPEN",
    "RE_INVOKE_CLOSE",
    "RE_PARAM_OPEN",
    "RE_PARAM_CLOSE",
    "RE_PARAM_TAG",
    "RE_PLAIN_PARAM",
    "RE_V3_TOOL",
    "RE_SPECIAL",
    "RE_SPECIAL_DEGRADED",
    "RE_THINK",
    "RE_THINK_CLOSE",
    "markup_text",
    "s1_dsml_in_content",
    "s2_dsml_in_reasoning",
    "s3_unbalanced_dsml",
    "s4_bare_invoke",
    "expected_dialect",
    "s5_wrong_dialect",
    "s6_malformed_param",
    "s7_special_token_leak",
    "s8_think_tag_leak",
    "ERROR_BODY",
    "s9_all_reasoning",
    "s10_finish_mismatch",
    "s11_bad_tool_args",
    "s15_empty_turn",
    "s16_transfer_error_turn",
    "s12_repetition_loop",
    "C0",
    "s14_token_salad",
    "char_entropy",
    "entropy_outliers",
    "script_of",
    "s13_script_switch",
    "SIGNATURES",
    "LEAK",
    "DEGENERATE",
    "detect",
    "assess_session",
    "evidence",
]
