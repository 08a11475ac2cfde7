"""An input the store holds, ingested again with other options: read again, its rows replaced.

An input is keyed by its content, so the same file ingested again is a duplicate, and nothing
changes. The options that change how its lines are read (`--tz`, `--year`, `--date`, `--host`,
`--role`, `--parser`), given on the command line and different from those the held input was
read with, say the user wants it read again: the held input is dropped (its manifest, then its
parts, forensics/store/commits.py) and the new read committed in its place, with a note. Options
left out change nothing: ingesting a dump again for its new files keeps the `--tz` an earlier
ingest gave one of them.

Between the drop and the commit the store holds neither; a kill there leaves the input out, and
the same command reads it again.
"""

from __future__ import annotations

import json

from forensics.ingest.records import Options
from forensics.store import Store, commits, pieces

# what a held input was read with, in its files row: option name -> column (or resume_state key)
_COLUMNS = ("tz", "host", "role", "format", "resume_state")
OPTIONS = ("tz", "year", "date", "host", "role", "format")
_FLAGS = {"format": "--parser"}


def given_state(opts: Options) -> dict:
    """The options as given, for the input's resume_state: what a later ingest compares against."""
    return {"tz": opts.tz, "year": opts.year, "date": opts.date, "role": opts.role, "format": opts.format}


def held_with(store: Store, key: str) -> dict | None:
    """The options the input committed under `key` was read with (None when the store holds no such input)."""
    m = commits.read(commits.manifest_path(store, key))
    if m is None or key not in store.committed():
        return None
    # an input's files row is its one row: a failed or skipped record is never under a content key
    rows = pieces.files_rows(store.input_parts(key, "files", m), _COLUMNS)
    if not rows:
        return None
    row = rows[0]
    try:
        state = json.loads(row.get("resume_state") or "{}") or {}
    except ValueError:
        state = {}
    given = state.get("given") or {}
    return {
        "tz": row.get("tz") or "UTC",
        "host": row.get("host"),
        "role": row.get("role"),
        "format": row.get("format"),
        # the year the parser used where it says (server logs), else the one given
        "year": state.get("year", given.get("year")),
        "date": given.get("date"),
    }


def differences(opts: Options, host: str, held: dict | None) -> list[str]:
    """`--tz Asia/Shanghai (was UTC)` for each option given now that the held input was read otherwise."""
    if held is None:
        return []
    now = {**given_state(opts), "host": host}
    out = []
    for name in opts.explicit:
        if name in OPTIONS and now.get(name) != held.get(name):
            out.append(f"{_FLAGS.get(name, '--' + name)} {now.get(name)} (was {held.get(name) or 'none'})")
    return out


def replace_note(what: list[str]) -> str:
    return f"read again with {', '.join(what)}: the rows the store held of it are replaced"


def held_hosts(store: Store, sources: list) -> dict[str, str]:
    """path -> the host of the input the store holds of the same content, for each plain input it
    holds: found by the content's key, so a file given alone (whose host its name would give)
    or from another folder keeps the host it was read under. Reads each input once more, which
    only an ingest that gives options into a store that holds inputs does."""
    from forensics.ingest.digest import content_digest

    if not store.inputs.is_dir() or not store.committed():
        return {}
    out = {}
    for s in sources:
        if s.special or s.size is None:
            continue
        try:
            sha = content_digest(s.open, None)[0]
        except Exception:  # the input's own read says what is wrong with it
            continue
        held = held_with(store, sha[:32])
        if held and held.get("host"):
            out[s.path] = held["host"]
    return out
