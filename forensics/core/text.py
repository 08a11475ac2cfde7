"""Text from logs and transcripts is untrusted: make its control characters visible."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_control(s: str) -> str:
    """Make control and bidi characters (ANSI / OSC escapes, bidi overrides) visible as \\xNN / \\uNNNN."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) > 0xFF else f"\\x{ord(m.group()):02x}", s)
