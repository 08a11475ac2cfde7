"""The native scanner's configuration, generated from the grammar: what it matches comes from
`grammar.py` alone, never from tables of its own (parsers/_fastlog.c, `Config`)."""

from __future__ import annotations

import functools

from forensics.parsers import native
from forensics.parsers.server_log.grammar import (
    GRAPH_BACKENDS,
    KNOWN_STATS_KEYS,
    PEER_LITERALS,
    RANK_LITERAL,
    RANK_TAGS,
    REQUEST_FIELD_LITERALS,
    REQUEST_JSON_EVENT,
    REQUEST_LEADERS,
    RID_LITERALS,
    ROOM_LITERALS,
    STATS_KEYS,
)

# The stats columns the scanner fills, in STATS_KEYS order, with their types.
COLUMNS = [(col, typ) for col, _, _, typ in STATS_KEYS]
# _fastlog.c's LIT_* flags
LIT_FIELD, LIT_ROOM, LIT_LEAVE, LIT_DIGIT = 1, 2, 4, 8
# _fastlog.c's request kinds
REQUEST_KINDS = {"request_received": 1, "request_finished": 2}


def stats_columns(side: str) -> dict[str, str]:
    """Raw key -> column on one side (side-specific keys only on their side)."""
    m: dict[str, str] = {}
    for col, keys, key_side, _ in STATS_KEYS:
        if key_side in (None, side):
            for k in keys:
                assert m.setdefault(k, col) == col, k
    return m


def keys() -> list[tuple[str, int, int, str]]:
    """Every known stats key: its column on the prefill and on the decode side (-1: known, but no
    column on that side), and its graph backend for a `<backend> graph` key ("" for the others)."""
    index = {col: i for i, (col, _) in enumerate(COLUMNS)}
    sides = [stats_columns("prefill"), stats_columns("decode")]
    graph = {f"{b} graph": b for b in GRAPH_BACKENDS}
    return [(k, *(index[m[k]] if k in m else -1 for m in sides), graph.get(k, "")) for k in KNOWN_STATS_KEYS]


def literals() -> list[tuple[str, int]]:
    """(literal, flags): an access line holding a LIT_FIELD one may have a rid, room, request
    field or rank for the polars path to find; a request line holding a LIT_ROOM one may have a
    room written another way than `bootstrap_room=N`; a LIT_LEAVE one (a peer address, the JSON
    form) leaves a request line to polars."""
    flags: dict[tuple[str, bool], int] = {}
    for x in (*RID_LITERALS, *ROOM_LITERALS, *REQUEST_FIELD_LITERALS, RANK_LITERAL):
        flags[x, False] = flags.get((x, False), 0) | LIT_FIELD
    for x in ROOM_LITERALS:
        flags[x, False] |= LIT_ROOM
    for x, digit in (*PEER_LITERALS, (REQUEST_JSON_EVENT, False)):
        flags[x, digit] = flags.get((x, digit), 0) | LIT_LEAVE | (LIT_DIGIT if digit else 0)
    return [(x, f) for (x, _), f in flags.items()]


def leaders() -> list[tuple[str, int]]:
    return [(lead, REQUEST_KINDS[kind]) for kind, leads in REQUEST_LEADERS.items() for lead in leads]


@functools.cache
def config():
    """The scanner's `Config` for this grammar (built once: it never changes)."""
    return native.config(keys(), "".join(t[0] for _, t in COLUMNS), RANK_TAGS, literals(), leaders())
