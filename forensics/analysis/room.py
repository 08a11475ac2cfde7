"""One bootstrap room's story: every server line and trace event of it, in corrected time order."""

from __future__ import annotations

import dataclasses

import polars as pl

from forensics.analysis.clocks import clock_warnings
from forensics.analysis.session import Session, using
from forensics.catalog import named as queries
from forensics.core.errors import ForensicsError, UsageError
from forensics.store import Store


@dataclasses.dataclass
class RoomStory:
    room: int
    offsets: dict[str, float]  # the offsets the times were corrected with
    summary: pl.DataFrame  # the room's row of `rooms`
    timeline: pl.DataFrame
    clock_warnings: list[str] = dataclasses.field(default_factory=list)  # unset offsets the estimates call for
    # the room's row of `failed_requests` (none when it did not fail): ranks, lines, a simultaneous start
    request: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)


def parse_room(text: str) -> int:
    try:
        room = int(text)
    except ValueError:
        raise UsageError(f"a room is a decimal integer, got {text!r}") from None
    if not 0 <= room < 1 << 63:
        raise UsageError(f"room {room} is outside 0 .. 2^63-1")
    return room


def room_story(session: Session | Store, room: int, offsets: dict[str, float] | None = None) -> RoomStory:
    """Everything known about `room`, across hosts and sources, ordered by corrected time.

    `offsets` (a session of a store given as such) corrects with those rather than clocks.json's,
    and leaves out the warnings about offsets not set."""
    with using(session, offsets=offsets) as s:
        con = s.con
        timeline = pl.from_arrow(con.sql(queries.internal("_room_story").sql, params={"room": room}).to_arrow_table())
        summary = pl.from_arrow(
            con.sql("SELECT * FROM rooms WHERE bootstrap_room = $room", params={"room": room}).to_arrow_table()
        )
        request = pl.from_arrow(
            con.sql(
                "SELECT * FROM failed_requests WHERE bootstrap_room = $room", params={"room": room}
            ).to_arrow_table()
        )
        warnings = clock_warnings(s) if offsets is None else []
        used = s.offsets
    if timeline.height == 0:
        raise ForensicsError(
            f"no line or trace event names room {room}",
            help='list rooms with `forensics sql "SELECT bootstrap_room, outcome FROM rooms"`',
        )
    return RoomStory(room, used, summary, timeline, warnings, request)
