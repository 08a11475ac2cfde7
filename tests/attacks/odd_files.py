"""Things in a dump that are not plain files, or not inputs at all: never opened blindly, never read twice."""

from __future__ import annotations

import io
import os
import socket
import tarfile

from tests.attacks import Attack, attack, good


@attack
def fifo_in_the_dump_is_never_opened(t: Attack) -> None:
    """A named pipe named like a log beside a good log (a process's stdout redirect left in place): listed as
    skipped (a FIFO) with a note, never opened, so the ingest ends, good log ingested, exit 0."""
    _, n_good = t.good_log()
    os.mkfifo(t.path("dump", "decode-0", "stdout.log"))
    run = t.ingest(t.root / "dump", subprocess_run=True, timeout=120)
    assert "stdout.log: skipped: a FIFO, not a file: never opened" in run.stderr, run.stderr
    f = t.files()["stdout.log"]
    assert (f["status"], f["skip_kind"]) == ("skipped", "special")
    assert t.count("batches") == n_good


@attack
def socket_in_the_dump_is_never_opened(t: Attack) -> None:
    """A Unix socket named like a log (a log shipper's endpoint) beside a good log: skipped as special with a
    note, good log ingested, exit 0."""
    _, n_good = t.good_log()
    # a socket path is limited to ~107 bytes: bind relative to the dump folder
    sock = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    try:
        os.chdir(t.path("dump", "decode-0", "x").parent)
        sock.bind("journal.log")
    finally:
        os.chdir(cwd)
    try:
        run = t.ingest(t.root / "dump", subprocess_run=True, timeout=120)
    finally:
        sock.close()
    assert "journal.log: skipped: a socket, not a file: never opened" in run.stderr, run.stderr
    assert t.files()["journal.log"]["skip_kind"] == "special"
    assert t.count("batches") == n_good


@attack
def broken_symlink_fails_alone(t: Attack) -> None:
    """A symlink to a log that is gone (rotated away) beside a good log: that input fails with one clear error
    naming it and a help line, the good log is ingested, exit 1 with the summary."""
    _, n_good = t.good_log()
    os.symlink(t.root / "dump" / "decode-0" / "server.log.1", t.path("dump", "decode-0", "latest.log"))
    run = t.ingest(t.root / "dump", exit=1)
    line = t.error_names(run, "latest.log")
    assert "No such file or directory" in line
    assert "  = help: check the file exists" in run.stderr
    assert "error: 1 of 2 inputs failed:" in run.stderr
    assert t.count("batches") == n_good


@attack
def symlink_loops_end(t: Attack) -> None:
    """A symlink to itself and a folder link back to the dump: the self-loop fails alone naming the file, the
    folder loop is not walked twice, each real log ingested once, exit 1."""
    _, n_good = t.good_log()
    os.symlink("self.log", t.path("dump", "decode-0", "self.log"))
    os.symlink(t.root / "dump", t.path("dump", "decode-0", "back"))
    run = t.ingest(t.root / "dump", exit=1)
    assert "Too many levels of symbolic links" in t.error_names(run, "self.log")
    assert t.count("batches") == n_good
    assert t.sql("SELECT count(*) AS n FROM files WHERE status = 'ingested'")["n"][0] == 1


@attack
def directory_named_like_a_log(t: Attack) -> None:
    """A directory named x.log (holding another host's log) beside a good log: walked as a folder, not
    opened as a file, both logs ingested, exit 0."""
    _, n_a = t.good_log("dump/decode-0/server.log")
    _, n_b = t.good_log("dump/decode-1/x.log/server.log")
    t.ingest(t.root / "dump")
    assert t.count("batches") == n_a + n_b
    paths = t.sql("SELECT path, status FROM files ORDER BY path").rows()
    assert paths == [
        (str(t.root / "dump/decode-0/server.log"), "ingested"),
        (str(t.root / "dump/decode-1/x.log/server.log"), "ingested"),
    ]


@attack
def store_inside_the_dump_is_not_an_input(t: Attack) -> None:
    """The store placed inside the dump folder, ingested twice, then renamed and the dump ingested elsewhere:
    the store is never read back as input, each run exits 0 and the good log is counted once."""
    _, n_good = t.good_log()
    dump = t.root / "dump"
    inner = dump / t.rng.choice(["store", "forensics-store", "results", ".store"])
    for _ in range(2):
        t.ingest(dump, store=inner)
        assert t.count("files", store=inner) == 1 and t.count("batches", store=inner) == n_good
    os.rename(inner, dump / "old-results")
    t.ingest(dump, store=t.root / "other")
    assert t.sql("SELECT path FROM files", t.root / "other")["path"].to_list() == [
        str(dump / "decode-0" / "server.log")
    ]


# 20,000 members is the corpus's figure; at the per-input cost measured under load (0.15 s a member
# in the parse passes) it would take most of an hour, so the suite's run draws fewer and the full count
# is one environment variable away
TAR_MEMBERS = int(os.environ.get("ATTACK_TAR_MEMBERS") or 200)


@attack
def tar_of_many_tiny_members_and_odd_ones(t: Attack) -> None:
    """A .tar.gz of many one-line logs over a drawn number of hosts, plus members that are a FIFO, a
    character device, a symlink to /etc/passwd, a hard link, an empty file and a `../` path: it completes,
    each log member is one input with its one batch on its host, nothing outside the archive is read
    (no /etc/passwd line anywhere), the special members add no lines, exit 0."""
    hosts = min(t.rng.randint(2, 40), TAR_MEMBERS)
    p = t.path("incident.tar.gz")
    odd = []
    with tarfile.open(p, "w:gz") as tf:
        for i in range(TAR_MEMBERS):
            data = good(1, i).encode()
            info = tarfile.TarInfo(f"dump/decode-{i % hosts}/req-{i}.log")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, kind, link in (
            ("pipe.log", tarfile.FIFOTYPE, ""),
            ("tty.log", tarfile.CHRTYPE, ""),
            ("passwd.log", tarfile.SYMTYPE, "/etc/passwd"),
            ("hard.log", tarfile.LNKTYPE, "dump/decode-0/req-0.log"),
        ):
            info = tarfile.TarInfo(f"dump/decode-0/{name}")
            info.type, info.linkname = kind, link
            tf.addfile(info)
            odd.append(name)
        for name in ("dump/decode-0/empty.log", "../../escape/decode-0/up.log"):
            data = b"" if "empty" in name else good(1, 5000).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    t.ingest(p, jobs=2, subprocess_run=True, timeout=1800)
    assert t.count("batches") == TAR_MEMBERS + 1  # the `../` member is read in place, as any member
    assert t.count("files", "status = 'ingested' AND path LIKE '%req-%'") == TAR_MEMBERS
    assert t.sql("SELECT count(DISTINCT host) AS n FROM batches WHERE source_file LIKE '%req-%'")["n"][0] == hosts
    assert t.count("events", "message LIKE '%root:x:0:0%'") == 0
    assert t.count("unparsed", "line LIKE '%root:%'") == 0
    assert not (t.root / "escape").exists() and not (t.root.parent / "escape").exists()
    for name in odd:  # listed or left out, never lines
        assert t.count("files", f"path LIKE '%{name}' AND coalesce(lines, 0) > 0") == 0, name
