"""An input the store holds, ingested again with other options, is read again and replaces what the
store held of it; `forensics remove` takes inputs out. No other input's rows change (ingest/reread.py,
forensics/store/remove.py).

The logs are SGLang's decode and prefill lines as the servers print them."""

from __future__ import annotations

import hashlib
import json

from click.testing import CliRunner

from forensics.cli import main
from forensics.store import Store
from tests.conftest import sql

DECODE = (
    "[2025-09-17 16:23:01 DP0 TP0] Decode batch, #running-req: 12, #token: 40960, token usage: 0.31, "
    "gen throughput (token/s): 812.40, #queue-req: 3\n"
    "[2025-09-17 16:23:09 DP0 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='a1f0' "
    "decode_req.req.bootstrap_room=4127750395128840213 with exception KVTransferError(bootstrap_room="
    "4127750395128840213): Request 4127750395128840213 timed out after 300.0s in KVPoll.WaitingForInput\n"
)
PREFILL = (
    "[2025-09-17 08:22:58 DP0 TP0] Prefill batch. #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.02, "
    "#running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 1\n"
)


def _dump(tmp_path):
    (tmp_path / "dump" / "decode-0").mkdir(parents=True)
    (tmp_path / "dump" / "prefill-0").mkdir()
    (tmp_path / "dump" / "decode-0" / "server.log").write_text(DECODE)
    (tmp_path / "dump" / "prefill-0" / "server.log").write_text(PREFILL)
    return tmp_path / "dump"


def _cli(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def _said(out: str, err: str) -> str:
    """What a command printed, its lines as wrapped to the terminal joined again."""
    return " ".join((out + err).split())


def _digests(store: str, path_part: str) -> dict[str, str]:
    """sha256 of every Parquet part of the inputs whose path holds `path_part`."""
    s = Store(store)
    keys = sql(store, "SELECT path FROM files").to_series().to_list()
    assert any(path_part in k for k in keys)
    out = {}
    for key, m in s.manifests().items():
        files = s.input_parts(key, "files", m)
        rows = sql(store, f"SELECT path FROM read_parquet('{files[0]}')").to_series().to_list()
        if any(path_part in p for p in rows):
            for f in s.input_parts(key, None, m):
                with open(f, "rb") as fh:
                    out[f] = hashlib.sha256(fh.read()).hexdigest()
    return out


def test_tz_on_a_held_input_replaces_its_rows_and_no_other(tmp_path):
    dump, store = _dump(tmp_path), str(tmp_path / "store")
    assert _cli("ingest", dump, "--store", store)[0] == 0
    prefill = _digests(store, "prefill-0")
    before = sql(store, "SELECT ts FROM events WHERE kind = 'transfer_failed'").item()

    decode = dump / "decode-0" / "server.log"
    code, out, err = _cli("ingest", decode, "--tz", "Asia/Shanghai", "--store", store)
    assert code == 0, err
    assert "read again with --tz Asia/Shanghai (was UTC): the rows the store held of it are replaced" in _said(out, err)
    # the decode server's clock was UTC+8: its lines move eight hours back, once each
    got = sql(store, "SELECT host, ts FROM events WHERE kind = 'transfer_failed'").rows()
    assert [(h, (before - t).total_seconds()) for h, t in got] == [("decode-0", 8 * 3600)]
    assert sql(store, "SELECT count(*) FROM batches WHERE host = 'decode-0'").item() == 1
    files = sql(store, "SELECT host, tz FROM files ORDER BY host").rows()
    assert files == [("decode-0", "Asia/Shanghai"), ("prefill-0", "UTC")]
    # the derived views read the new rows alone
    assert sql(store, "SELECT count(*) FROM failed_requests").item() == 1
    assert _digests(store, "prefill-0") == prefill

    # the same options again, and the dump again without them: nothing changes
    code, out, err = _cli("ingest", decode, "--tz", "Asia/Shanghai", "--store", store)
    assert code == 0 and "duplicate" in out + err
    assert _cli("ingest", dump, "--store", store)[0] == 0
    assert sql(store, "SELECT host, tz FROM files ORDER BY host").rows() == files
    assert sql(store, "SELECT count(*) FROM events").item() == 1


def test_host_on_a_held_input_moves_it(tmp_path):
    dump, store = _dump(tmp_path), str(tmp_path / "store")
    assert _cli("ingest", dump, "--store", store)[0] == 0
    code, out, err = _cli("ingest", dump / "decode-0" / "server.log", "--host", "decode-7", "--store", store)
    assert code == 0, err
    assert "--host decode-7 (was decode-0)" in _said(out, err)
    assert sql(store, "SELECT DISTINCT host FROM events").to_series().to_list() == ["decode-7"]
    assert sql(store, "SELECT count(*) FROM files").item() == 2


def test_remove_takes_inputs_out_with_their_derived_rows(tmp_path):
    dump, store = _dump(tmp_path), str(tmp_path / "store")
    assert _cli("ingest", dump, "--store", store)[0] == 0
    prefill = _digests(store, "prefill-0")
    assert sql(store, "SELECT count(*) FROM failed_requests").item() == 1

    code, out, err = _cli("remove", dump / "decode-0", "--store", store)
    assert code == 0, err
    assert f"removed {dump / 'decode-0' / 'server.log'}" in out
    assert "1 input removed, 1 left" in out
    assert sql(store, "SELECT count(*) FROM events").item() == 0
    assert sql(store, "SELECT count(*) FROM failed_requests").item() == 0
    assert sql(store, "SELECT count(*) FROM wedge_streams WHERE host = 'decode-0'").item() == 0
    assert _digests(store, "prefill-0") == prefill

    code, _, err = _cli("remove", tmp_path / "no-such.log", "--store", store)
    assert code == 2 and "no input of the store is named" in err
    # what was removed is read again by the same ingest
    assert _cli("ingest", dump, "--store", store)[0] == 0
    assert sql(store, "SELECT count(*) FROM failed_requests").item() == 1
    summary = json.loads(_cli("summary", "--store", store, "--format", "json")[1])
    assert summary["failures"]["requests"] == 1
