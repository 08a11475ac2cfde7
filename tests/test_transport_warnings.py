"""The transfer libraries' warnings that explain an incident are failure signals of their host
(docs/formats/NIXL.md, "Transport warnings"): Mooncake marking a NIC inactive and timing a batch
out, NIXL's UCX requests cancelled, a metadata session's header lost. Written from the glog shape
those libraries print (`W0917 16:23:13.419399 <tid> <file>:<line>] <msg>`), not from our generator."""

from __future__ import annotations

import json

from click.testing import CliRunner

from forensics.cli import main
from tests.conftest import sql

MOONCAKE = (
    "W0917 16:23:13.419399 12345 rdma_context.cpp:372] Too many errors found in local RNIC mlx5_1, mark it inactive\n"
    "I0917 16:23:14.000001 12345 transfer_engine.cpp:512] Sync batch data transfer timeout after 30000000000ns\n"
    "W0917 16:23:16.200000 12345 transfer_metadata_plugin.cpp:611] Session::readHeader failed\n"
    # ordinary lines of the same library: not signals
    "I0917 16:23:17.000000 12345 transfer_engine.cpp:120] Transfer Engine uses address 10.0.0.7:17001\n"
)
NIXL = "".join(
    f"W0917 16:23:2{i}.100000  4242 ucx_backend.cpp:88] Unexpected UCX error: Request canceled\n" for i in range(8)
)
DATED = (
    "[2025-09-17 16:23:10 DP0 TP0] Decode batch, #running-req: 12, #token: 40960, token usage: 0.31, "
    "gen throughput (token/s): 812.40, #queue-req: 3\n"
)


def test_transport_warnings_are_signals_of_their_host(tmp_path):
    (tmp_path / "dump" / "decode-0").mkdir(parents=True)
    (tmp_path / "dump" / "decode-0" / "sglang.log").write_text(DATED)
    (tmp_path / "dump" / "decode-0" / "mooncake.log").write_text(MOONCAKE)
    (tmp_path / "dump" / "decode-0" / "nixl.log").write_text(NIXL)
    store = str(tmp_path / "store")
    r = CliRunner().invoke(main, ["ingest", str(tmp_path / "dump"), "--store", store])
    assert r.exit_code == 0, r.output
    got = sql(store, "SELECT kind, sum(n_lines)::INT AS n FROM failure_signals GROUP BY kind").rows()
    assert dict(got) == {"transport_warning": 11}
    assert sql(store, "SELECT count(*) FROM events WHERE kind = 'mooncake_log'").item() == 1
    doc = json.loads(CliRunner().invoke(main, ["summary", "--store", store, "--format", "json"]).stdout)
    assert doc["failures"]["signals"] == 11
    md = CliRunner().invoke(main, ["evidence", "--store", store]).stdout
    assert "| decode-0 | transport_warning |" in md and "Unexpected UCX error: Request canceled" in md
