"""Source-format parsers, registered in one explicit list.

A new format is one module here with `name`, `description`, `samples`, `sniff` and `parse`
(see parsers/base.py), plus one line in PARSERS. Order matters only for ties in `sniff`:
the first most-confident parser wins. The modules themselves are the parser objects. Parsers
that take a whole folder also define `sniff_dir(path) -> float`.
"""

from __future__ import annotations

from forensics.parsers import (
    claude_code,
    nixl_telemetry,
    openai_proxy,
    opencode,
    outputs_dir,
    server_log,
    transfer_trace,
)

PARSERS = [
    server_log,
    transfer_trace,
    nixl_telemetry,
    openai_proxy,
    claude_code,
    opencode,
    outputs_dir,
]


def by_name(name: str):
    for p in PARSERS:
        if p.name == name:
            return p
    raise KeyError(name)
