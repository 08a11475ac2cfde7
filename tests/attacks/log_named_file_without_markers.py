"""A file whose name says log but whose head carries no marker: read as a log, never skipped as 'not a log'."""

from __future__ import annotations

import string

from tests.attacks import Attack, attack

CRASH = (
    "#\n# A fatal error has been detected by the runtime:\n#\n#  SIGSEGV (0xb) at pc=0x00007f3a, pid={i}, tid={i}\n"
    "Segmentation fault (core dumped)\n  frame #{i}: 0x{i:08x} in ncclProxyService() from libnccl.so.2\n"
)
UNKNOWN = "I{i:04d} 10:00:{s:02d}.123 engine.cc:{i}] step {i} done, queue={s}, kv={i}\n"


def _body(t: Attack, kind: str, n: int) -> str:
    if kind == "garbage":
        chars = string.ascii_letters + string.digits + " =:,.;/[]{}-_"
        return "".join("".join(t.rng.choice(chars) for _ in range(t.rng.randint(1, 120))) + "\n" for _ in range(n))
    if kind == "crash":
        return "".join(CRASH.format(i=i) for i in range(n // 6 + 1))
    return "".join(UNKNOWN.format(i=i, s=i % 60) for i in range(n))


@attack
def log_named_file_without_markers_is_read(t: Attack) -> None:
    """A host's `sglang.log` (or `stdout`, `x.err`, `x.log.3`, drawn) of garbage, an unknown build's lines or a crash
    dump, with no known marker in its first 64 KiB, beside a good log and notes named by what they are: the file is
    ingested as a server log with a note saying it was read by its name, each of its lines in `unparsed` with its
    line number, the good log's batches all there, the Markdown, YAML, CSV and Python notes (also under .log names)
    skipped by their kind, exit 0."""
    _, n_good = t.good_log()
    kind = t.rng.choice(["garbage", "unknown", "crash"])
    name = t.rng.choice(["sglang.log", "stdout", "worker.err", "sglang.log.3", "server.out"])
    body = _body(t, kind, t.rng.randint(5_000, 40_000))
    p = t.write(f"dump/decode-1/{name}", body)
    t.write("dump/README.md", "# Incident\n\n- decode-1 crashed\n- restarted\n")
    t.write("dump/notes.log", "# What we saw\n\n- the decode pod died\n- restarted at 10:05\n\n```\nkill -9\n```\n")
    t.write("dump/cluster.log", "---\ndecode:\n  replicas: 2\n")
    t.write("dump/rooms.log", "room,host,line\n1,decode-0,ok\n2,decode-1,failed\n")
    t.write("dump/repro.log", "#!/usr/bin/env python3\nimport os\nprint(os.getpid())\n")
    run = t.ingest(t.root / "dump")
    f = t.files()[name]
    lines = body.count("\n")
    assert (f["status"], f["format"], f["lines"]) == ("ingested", "server_log", lines), f
    said = " ".join(run.stderr.split())  # the note may be wrapped to the terminal's width
    assert f"{name}: no server-log, transcript or trace markers" in said, run.stderr[-2000:]
    assert "read as a log because its name says so" in said, run.stderr[-2000:]
    got = t.sql(
        "SELECT count(*) AS n, min(line_no) AS lo, max(line_no) AS hi FROM unparsed WHERE source_file = $p", p=str(p)
    ).row(0)
    parsed = f["parsed_lines"] + f["continuation_lines"]
    assert got[0] == lines - parsed and got[1] >= 1 and got[2] <= lines, (got, f)
    assert got[0] > 0
    assert t.count("batches", f"source_file NOT LIKE '%{name}'") == n_good
    kinds = {n: r["skip_kind"] for n, r in t.files().items() if r["status"] == "skipped"}
    assert kinds == {
        "README.md": "markdown",
        "notes.log": "markdown",
        "cluster.log": "yaml",
        "rooms.log": "csv",
        "repro.log": "python",
    }, kinds
