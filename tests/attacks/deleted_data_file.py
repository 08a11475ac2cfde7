"""A committed input's data file deleted from the store: every read refuses, none gives a smaller answer."""

from __future__ import annotations

from tests.attacks import Attack, attack

READS = (
    ("sql", "SELECT count(*) AS n FROM batches"),
    ("summary",),
    ("timeline",),
    ("evidence",),
    ("replies",),
    ("clocks",),
    ("query", "run", "host_load"),
    ("room", "1"),
)


@attack
def deleted_data_file_is_refused(t: Attack) -> None:
    """One committed input's part-<key>-00000.parquet of batches deleted from tables/ in a store of several logs: every report
    and query command exits 1 with the store error naming that file, which input it belongs to and the
    `verify --repair` fix, never a smaller answer; verify --repair drops the input and the same ingest reads it
    again, giving every batch row back."""
    sizes = [t.good_log(f"dump/decode-{i}/server.log")[1] for i in range(t.rng.randint(2, 4))]
    t.ingest(t.root / "dump")
    victim = t.rng.randrange(len(sizes))
    source = str(t.root / f"dump/decode-{victim}/server.log")
    sha = t.sql("SELECT sha256 FROM files WHERE path = $s", s=source)["sha256"][0]
    (part,) = (t.root / "store" / "tables" / "batches").glob(f"*/*/part-{sha[:32]}-00000.parquet")
    t.close()
    part.unlink()
    for args in READS:
        run = t.cli(*args, "--store", t.root / "store", exit=1)
        line = t.error_names(run, "store file ")
        assert f"  --> {part}" in run.stderr, f"{args}: {run.stderr[-1500:]}"
        assert "verify --repair" in run.stderr, f"{args}: {run.stderr[-1500:]}"
        assert "is missing" in line and source in line, f"{args}: the error does not name the input: {line}"
    run = t.cli("verify", "--store", t.root / "store", "--repair")
    assert source in run.stdout, run.stdout
    t.ingest(t.root / "dump")
    assert t.count("batches") == sum(sizes)
