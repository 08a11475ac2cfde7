"""Ctrl-C while an ingest finds, sniffs and hashes its inputs: the one line, nothing in the store."""

from __future__ import annotations

import io
import tarfile

from tests.attacks import Attack, attack, good


@attack
def sigint_while_reading(t: Attack) -> None:
    """SIGINT (to the ingest or its process group) at a drawn moment while a dump of logs, traces and an archive of
    many small logs is being found and sniffed, with a pool of workers starting: exit 130 with one line saying how
    many inputs are committed and to run the same ingest again, no worker left, nothing half-written, verify finds
    nothing wrong; the same ingest then completes with every input once."""
    dump, inputs = t.incident()
    members = t.rng.randint(60, 150)
    with tarfile.open(dump / "more.tar.gz", "w:gz") as tf:
        for i in range(members):
            data = good(2, i).encode()
            info = tarfile.TarInfo(f"decode-{i % 3}/req-{i}.log")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    line = t.stop_and_resume(dump, inputs + members, "reading", within=0.3, jobs=2)
    assert "run the same ingest again" in line, line
