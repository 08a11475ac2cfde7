"""The clock offsets file, <store>/clocks.json: host -> seconds its clock runs ahead.

Offsets are explicit: what `forensics clocks set` or `ingest --clock-offset` recorded. The file is
written whole into a temporary name and renamed over, so a reader never sees half of it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from forensics.core.errors import StoreError, UsageError

# a clock further off than this is not a skew but a wrong date (or a typo): set the date instead
MAX_OFFSET_S = 86400.0


def offset_problem(seconds) -> str | None:
    """Why `seconds` is not a clock offset (None: it is one): a finite number within a day."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return f"{type(seconds).__name__} {json.dumps(seconds)[:40]} is not a number of seconds"
    try:
        value = float(seconds)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        return f"{seconds} is not a finite number of seconds"
    if abs(value) > MAX_OFFSET_S:
        return f"{seconds:g} s is more than a day ({MAX_OFFSET_S:g} s)"
    return None


def clocks_problem(data) -> str | None:
    """What is wrong with the parsed content of a clocks.json (None: nothing)."""
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not an object of host -> seconds"
    for host, v in data.items():
        if not host:
            return "names an empty host"
        why = offset_problem(v)
        if why:
            return f"gives host {host!r} an offset that is not one: {why}"
    return None


def read_clocks(path: Path) -> dict:
    """The parsed JSON of a clocks.json, unchecked; StoreError when it is not JSON."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise _clocks_error(path, f"cannot be read ({type(e).__name__})") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise _clocks_error(path, f"is not JSON ({type(e).__name__})") from None


def _clocks_error(path: Path, what: str) -> StoreError:
    return StoreError(
        f"clocks.json {what}",
        file=str(path),
        help="`forensics verify --repair` keeps its valid entries (the file moves to "
        "clocks.json.broken); or fix it by hand, or delete it and `forensics clocks set HOST SECONDS`",
    )


def load(path: Path) -> dict[str, float]:
    """host -> seconds its clock runs ahead; StoreError when the file is not that."""
    data = read_clocks(path)
    why = clocks_problem(data)
    if why:
        raise _clocks_error(path, why)
    return {h: float(v) for h, v in data.items()}


def require_offset(host: str, seconds) -> None:
    """UsageError when `seconds` is not an offset one can record for `host`."""
    why = offset_problem(seconds)
    if why:
        raise UsageError(
            f"clock offset for {host}: {why}",
            help=f"an offset is a finite number of seconds within ±{MAX_OFFSET_S:g}; a clock off by "
            "more has the wrong date: ingest with --date or --tz",
        )


def write(path: Path, offsets: dict[str, float]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(offsets, indent=1, sort_keys=True))
    os.replace(tmp, path)
