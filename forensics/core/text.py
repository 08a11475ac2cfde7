"""Text from logs and transcripts is untrusted: make its control characters visible."""

from __future__ import annotations

import re

# C0 but tab and newline, DEL, C1 (CSI, OSC, ST as one byte), and the characters that reorder or
# break text: bidi marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9),
# line and paragraph separators
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


# marks a value that forensics.catalog's excerpt() kept whole for a masking, then the length it is
# cut to once masked (forensics.reports.redact): a private-use character, which no log writes
EXCERPT_MARK = "\ue000"


def escape_control(s: str) -> str:
    """Make control and bidi characters (ANSI / OSC escapes, bidi overrides) visible as \\xNN / \\uNNNN."""
    return CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) > 0xFF else f"\\x{ord(m.group()):02x}", s)
