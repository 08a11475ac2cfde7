"""The host an input is named for: a host's folder given alone names its host as it does inside its
parent (`ingest dump/prefill-0` and `ingest dump` both say `prefill-0`), unless `--host` says otherwise;
a dump's folder of files named by their hosts names each by its file."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from forensics.cli import main
from forensics.ingest.pipeline import default_host
from tests.conftest import ROOT

INCIDENT = ROOT / "sample_logs" / "incident"


def _touch(path, text="x\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_a_hosts_folder_alone_is_named_as_inside_its_parent(tmp_path):
    dump = tmp_path / "dump"
    log = _touch(dump / "prefill-0" / "sglang.log")
    rotated = _touch(dump / "prefill-0" / "sglang.log.1.gz")
    assert default_host(log, [str(dump)]) == "prefill-0"
    assert default_host(log, [str(dump / "prefill-0")]) == "prefill-0"
    assert default_host(rotated, [str(dump / "prefill-0")]) == "prefill-0"


def test_a_dumps_folder_of_files_names_each_by_its_file(tmp_path):
    flat = tmp_path / "flat"
    a, b = _touch(flat / "prefill-0.log"), _touch(flat / "decode-1.log.2")
    assert [default_host(a, [str(flat)]), default_host(b, [str(flat)])] == ["prefill-0", "decode-1"]
    # a folder beside the files: a dump's folder, not a host's
    mixed = tmp_path / "mixed"
    c = _touch(mixed / "server.log")
    _touch(mixed / "decode-0" / "server.log")
    assert default_host(c, [str(mixed)]) == "server"
    # files given one by one are named by their files, as before
    assert default_host(c, [c]) == "server"


def _hosts(store):
    r = CliRunner().invoke(
        main, ["sql", "--store", str(store), "--format", "json", "SELECT DISTINCT host FROM events ORDER BY host"]
    )
    assert r.exit_code == 0, r.output
    return [row["host"] for row in json.loads(r.stdout)]


def test_ingest_of_a_hosts_folder_names_the_host_unless_host_says_otherwise(tmp_path):
    folder = tmp_path / "dump" / "prefill-0"
    shutil.copytree(INCIDENT / "prefill-0", folder)
    r = CliRunner().invoke(main, ["ingest", str(folder), "--store", str(tmp_path / "s1")])
    assert r.exit_code == 0, r.output
    assert _hosts(tmp_path / "s1") == ["prefill-0"]
    r = CliRunner().invoke(main, ["ingest", str(folder), "--store", str(tmp_path / "s2"), "--host", "p0"])
    assert r.exit_code == 0, r.output
    assert _hosts(tmp_path / "s2") == ["p0"]
