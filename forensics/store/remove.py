"""`forensics remove`: inputs out of the store, with every row they brought.

An input is named as `forensics summary` and the `files` table list it (its path as ingest was
given it): a file, a folder (every input under it) or an archive (every member). Each input goes
as a failed or replaced one does (`commits.drop`: its manifest, then its parts, the per-input
tables the derived views read among them); the views are computed again from what is left, and
no other input's rows change.
"""

from __future__ import annotations

import dataclasses
import os

from forensics.core.errors import UsageError
from forensics.store import Store, commits, pieces


@dataclasses.dataclass
class Removed:
    inputs: list[tuple[str, str]]  # (path, status) of each input removed, in path order
    unmatched: list[str]  # names that matched no input


def _matches(path: str, name: str) -> bool:
    name = name.rstrip("/") or name
    return path == name or path.startswith(name + "/") or path.startswith(name + "!")


def matching(store: Store, names: list[str]) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """key -> (path, status) of every committed input a name names, and the names that name none.

    A name is also tried as its absolute path, so `remove dump/x.log` finds what `ingest /abs/dump`
    stored, and the other way round."""
    committed = store.manifests()
    rows = pieces.files_rows(
        [f for k, m in sorted(committed.items()) for f in store.input_parts(k, "files", m)], ("path", "status")
    )
    found: dict[str, tuple[str, str]] = {}
    unmatched = []
    for name in names:
        tries = {name, os.path.abspath(name)}
        hits = [r for r in rows if r.get("path") and any(_matches(r["path"], t) for t in tries)]
        if not hits:
            unmatched.append(name)
        for r in hits:
            found[r["_key"]] = (r["path"], r.get("status") or "ingested")
    return found, unmatched


def remove(store: Store, names: list[str]) -> Removed:
    """Drop every input the names name, under the store's lock (no ingest runs meanwhile)."""
    store.require()
    lock = store.lock()
    try:
        found, unmatched = matching(store, names)
        if not found:
            raise UsageError(
                f"no input of the store is named {', '.join(repr(n) for n in names)}",
                help='`forensics sql "SELECT path FROM files"` lists them',
            )
        for key in sorted(found, key=lambda k: found[k]):
            commits.drop(store, key)
    finally:
        lock.close()
    return Removed(sorted(found.values()), unmatched)
