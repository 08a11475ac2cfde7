"""Two clocks in one file: UCX stamps epoch seconds (UTC) and glog its process's local time beside
sglang's zone-less prefixes, which ingest reads in --tz. When they disagree by a zone, the
summary (and so the end of `forensics ingest`) names the offset and the --tz that fixes it."""

from __future__ import annotations

import datetime as dt

import pytest
from click.testing import CliRunner

from forensics.analysis import summary
from forensics.cli import main
from forensics.store import Store
from tests.conftest import ingest_paths

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 2, 8, 15, 40, tzinfo=UTC)


def _log(sglang_hours: float, ucx_delay_s: float = 0.0, glog_hours: float | None = None) -> str:
    """A decode log whose sglang clock is `sglang_hours` from UTC, with UCX lines among its stats."""
    out = []
    for i in range(6):
        t = T0 + dt.timedelta(seconds=10 * i)
        local = t + dt.timedelta(hours=sglang_hours)
        out.append(
            f"[{local:%Y-%m-%d %H:%M:%S} TP0] Decode batch, #running-req: {i + 1}, #token: 900, token usage: 0.01, "
            "cuda graph: True, gen throughput (token/s): 120.00, #queue-req: 0"
        )
        u = t + dt.timedelta(seconds=2 + ucx_delay_s)
        out.append(
            f"[{u.timestamp():.6f}] [node-d0:7711 :1]         ud_ep.c:278  UCX  ERROR   ud_ep 0x55d0: unhandled "
            "timeout error: Endpoint timeout"
        )
        if glog_hours is not None:
            g = t + dt.timedelta(seconds=3, hours=glog_hours)
            out.append(f"E{g:%m%d %H:%M:%S}.{g.microsecond:06d} 1234 rdma_transport.cpp:55] Failed to post send")
    return "\n".join(out) + "\n"


def _warnings(tmp_path, text: str, **opts) -> list[str]:
    (tmp_path / "decode-0").mkdir(exist_ok=True)
    (tmp_path / "decode-0" / "sglang.log").write_text(text)
    store = tmp_path / f"store-{len(list(tmp_path.iterdir()))}"
    ingest_paths([tmp_path / "decode-0"], store, **opts)
    return [w for w in summary.build(Store(store))["warnings"] if "sglang lines" in w]


def test_a_local_sglang_clock_beside_ucx_names_the_offset_and_the_tz(tmp_path):
    (w,) = _warnings(tmp_path, _log(sglang_hours=8))
    assert "its UCX lines (6) are -8.00 h from its sglang lines read in --tz UTC" in w
    assert "the sglang clock is UTC+08:00" in w and "--tz Etc/GMT-8" in w


def test_the_suggested_tz_silences_it(tmp_path):
    assert _warnings(tmp_path, _log(sglang_hours=8), tz="Etc/GMT-8") == []
    assert _warnings(tmp_path, _log(sglang_hours=5.5), tz="Asia/Kolkata") == []


def test_a_half_hour_zone_is_named_by_its_offset(tmp_path):
    (w,) = _warnings(tmp_path, _log(sglang_hours=5.5))
    assert "-5.50 h" in w and "UTC+05:30" in w and "a zone at UTC+05:30" in w


def test_clocks_that_agree_or_lines_that_are_late_warn_nothing(tmp_path):
    assert _warnings(tmp_path, _log(sglang_hours=0)) == []
    # UCX lines ten minutes after the stats around them: a delay, not a zone
    assert _warnings(tmp_path, _log(sglang_hours=0, ucx_delay_s=600)) == []


def test_glog_lines_in_another_zone_are_named(tmp_path):
    ws = _warnings(tmp_path, _log(sglang_hours=8, glog_hours=0), tz="Etc/GMT-8")
    (w,) = ws
    assert "its GLOG lines (6) are -8.00 h from its sglang lines read in --tz Etc/GMT-8" in w
    assert "write in different zones" in w


def test_ingest_prints_the_warning(tmp_path):
    (tmp_path / "decode-0").mkdir()
    (tmp_path / "decode-0" / "sglang.log").write_text(_log(sglang_hours=-7))
    res = CliRunner().invoke(main, ["ingest", str(tmp_path / "decode-0"), "--store", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert "+7.00 h from its sglang lines" in res.output and "--tz Etc/GMT+7" in res.output, res.output


def test_the_real_nixl_startup_log_is_read_eight_hours_off(real_logs, tmp_path):
    """sglang#5709: UCX's epoch says 06:23:54 UTC where the sglang prefix says 14:23:56 (and the
    bootstrap server's access line +0800): the log was written at UTC+08:00."""
    path = real_logs / "nixl_08_sglang5709_nixl_agent_init_prefill_warmup.log"
    if not path.exists():
        pytest.skip(f"{path.name} is not present")
    ingest_paths([path], tmp_path / "s")
    ws = [w for w in summary.build(Store(tmp_path / "s"))["warnings"] if "sglang lines" in w]
    assert len(ws) == 1 and "the sglang clock is UTC+08:00" in ws[0] and "--tz Etc/GMT-8" in ws[0], ws
