"""Deterministic sample incident: SGLang PD (1 prefill, 2 decode) over NIXL, plus agent transcripts.

`generate(out_dir, seed=7, scale=1.0)` simulates a DeepSeek-V3.2 PD deployment from its startup at
13:58:25 through a ~20-minute incident (14:00 to ~14:20 UTC) and writes what it would have left
behind, in the real input formats (see sample_logs/README.md for the planted.json reference):

    prefill-0/sglang.log                      sglang 0.5.16-era prefill log (DP4 TP4 EP4), NIXL abseil + UCX lines
    decode-0/sglang.log.1.gz, sglang.log      decode log, rotated: the .1.gz holds the part before 14:12:00
    decode-1/sglang.log                       decode log behind a k8s CRI prefix; its host clock runs +2.5 s
    trace/kvtrace-<host>-<pid>-<start>.jsonl  per-process KV transfer trace (docs/formats/TRANSFER_TRACE.md), 12 processes
    agent/proxy.jsonl                         OpenAI-compatible proxy log (req/resp lines, SSE streams, 500 bodies)
    agent/opencode-session-<id>.json          `opencode export` of each interactive session
    planted.json                              the planted facts, for tests (ingest skips this name)

The story (times are true UTC; the prefill host's clock is the reference):
- 14:04:30-14:06:30 a writer agent starts and slams prefill with fresh long contexts: `#queue-req`
  and the `#new-token` rate spike; the backlog drains a little later.
- 14:09:50 an agent with 80 sessions starts; it is killed at 14:09:57: an abort storm (every one of
  its requests aborted, >= 30 of them on decode-0 within 5 s).
- 14:10:03.5 decode-1's scheduler wedges: its stats lines stop for five minutes with 28 requests in
  flight, while its HTTP side lives on (k8s /health probes answered 503, `Health check failed …`
  every 30 s, new requests arriving). At 14:15:04 its loop runs again and times out the 24 stuck
  rooms in `KVPoll.WaitingForInput`; prefill's bootstrap timeouts for 20 of them follow ~2 s later.
- 14:18:20 a UCX link fault on prefill DP rank 2 fails the transfers to decode-0 DP rank 1 for a few
  seconds (UCX/NIXL lines, one transfer-worker traceback); a later request on that rank trips the
  metadata-corruption check and another gets corrupted KV.
- Corrupted replies: ~5 % baseline, ~30 % while prefill is slammed and in the 30 s after the storm's
  aborts, half of those in the 30 s after transfer failures or the wedge's timeouts on the same
  decode host. Three rooms have index_k checksum mismatches.

Replies carry no sglang rid (the proxy rewrites response ids to `chatcmpl-...`, opencode stores
none): they link to server requests by time and token counts only. Everything is drawn from
`random.Random(seed)`, so one seed gives byte-identical files. `scale` multiplies the agent traffic
and the prefill capacity together (queue dynamics keep their shape); the timeline and the planted
incidents are fixed. Standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import pathlib

from tools.samplegen.ids import iso
from tools.samplegen.planted import _dump_planted, _planted
from tools.samplegen.scenario import CLOCK_OFFSET, HOSTS, PREFILL, ROTATE_AT, SCHED_PID0, T0
from tools.samplegen.simulation import _simulate
from tools.samplegen.transcripts import _opencode, _proxy


def generate(out_dir: pathlib.Path, seed: int = 7, scale: float = 1.0) -> dict:
    """Write the bundle under `out_dir` and return the planted facts (also in out_dir/planted.json)."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    out_dir = pathlib.Path(out_dir)
    g = _simulate(seed, scale)
    g.decode_stats()
    trace = g.trace_events()  # sets the decode-side checksum times used by the checksum log lines
    g.request_lines()
    g.kubelet_probes()
    files: dict[str, dict] = {}
    blobs: dict[str, bytes] = {}

    # server logs
    for h in HOSTS:
        recs = sorted(g.lines[h], key=lambda x: (x[0], x[1]))
        if h == "decode-0":
            cut = T0 + ROTATE_AT
            parts = [
                ("decode-0/sglang.log.1.gz", [x for x in recs if x[0] < cut]),
                ("decode-0/sglang.log", [x for x in recs if x[0] >= cut]),
            ]
        else:
            parts = [(f"{h}/sglang.log", recs)]
        for rel, rs in parts:
            data, kinds = g.render_log(h, rs)
            info = dict(
                lines=data.count(b"\n"),
                kinds=dict(sorted(kinds.items())),
                stats_lines=kinds.get("prefill_stats", 0) + kinds.get("decode_stats", 0),
                first_ts=iso(rs[0][0] + CLOCK_OFFSET[h]),
                last_ts=iso(rs[-1][0] + CLOCK_OFFSET[h]),
                host=h,
                clock="host",
                compressed=rel.endswith(".gz"),
            )
            if rel.endswith(".gz"):
                blobs[rel] = gzip.compress(data, compresslevel=6, mtime=0)
            else:
                blobs[rel] = data
            info["uncompressed_bytes"] = len(data)
            files[rel] = info

    # transfer traces
    for (h, d), evs in sorted(trace.items(), key=lambda kv: (HOSTS.index(kv[0][0]), kv[0][1])):
        rooms = {e[2]["room"] for e in evs}
        name, data, counts = g.render_trace(h, d, evs)
        rel = f"trace/{name}"
        blobs[rel] = data
        files[rel] = dict(
            lines=data.count(b"\n"),
            events=dict(sorted(counts.items())),
            host=h,
            engine_rank=d,
            pid=SCHED_PID0[h] + d,
            side="prefill" if h == PREFILL else "decode",
            rooms=len(rooms),
            uncompressed_bytes=len(data),
        )

    # transcripts
    pdata, pcounts, proxy_ids = _proxy(g)
    blobs["agent/proxy.jsonl"] = pdata
    files["agent/proxy.jsonl"] = dict(format="openai_proxy_jsonl", uncompressed_bytes=len(pdata), **pcounts)
    oc_ids: dict = {}
    oc_file: dict = {}
    for name, data, counts, ids in _opencode(g):
        rel = f"agent/{name}"
        blobs[rel] = data
        files[rel] = dict(format="opencode_export", uncompressed_bytes=len(data), **counts)
        oc_ids.update(ids)
        for k in ids:
            oc_file[k] = rel

    planted = _planted(g, files, proxy_ids, oc_ids, oc_file, seed, scale)
    blobs["planted.json"] = _dump_planted(planted).encode()
    for rel, data in sorted(blobs.items()):
        p = out_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return planted


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.samplegen", description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=pathlib.Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args(argv)
    p = generate(a.out_dir, seed=a.seed, scale=a.scale)
    w = p["windows"]
    size = sum(f.stat().st_size for f in a.out_dir.rglob("*") if f.is_file())
    print(
        f"wrote {a.out_dir} ({size / 1e6:.2f} MB): {p['requests']['total']} requests, "
        f"{p['replies']['total']} replies ({p['replies']['corrupted']} corrupted), storm {w['storm']['aborted_requests']} "
        f"aborts on decode-0, wedge {w['wedge']['start']} .. {w['wedge']['end']} on decode-1"
    )
    return 0
