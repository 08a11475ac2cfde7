"""A generated PD incident bundle with known truth: clock offset, corrupted rooms, failed rooms.

Two hosts: prefill `node-p0` (the reference clock) and decode `node-d1`, whose clock is planted
`decode_offset_s` off (negative: behind, so uncorrected decode times precede prefill's). Each host
has an sglang server log (second-resolution prefixes, request logging and NIXL debug lines) and a
JSONL transfer trace (µs). Rids differ between sides; room 0 is warmup on both.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
from pathlib import Path

PREFILL, DECODE = "node-p0", "node-d1"
P_AGENT, D_AGENT = "8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7", "def7d2f1-d482-4cd2-b6de-f238da5a9c70"


@dataclasses.dataclass
class Truth:
    decode_offset_s: float
    rooms: list[int]
    mismatched: set[int]
    failed: set[int]
    decode_only: set[int]
    rids: dict[int, tuple[str, str]]  # room -> (prefill rid, decode rid)


def _stamp(t: float) -> str:
    # sglang prints whole seconds, truncated (time.strftime), no zone
    return dt.datetime.fromtimestamp(int(t), dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def write_bundle(root: Path, n_rooms: int = 30, decode_offset_s: float = -2.5, seed: int = 7) -> Truth:
    rnd = random.Random(seed)
    t_base = 1793354400.0  # 2026-10-30 10:00:00 UTC
    rooms = [rnd.randrange(1, 1 << 63) for _ in range(n_rooms)]
    mismatched = set(rooms[3:6])
    failed = {rooms[8], rooms[9]}
    decode_only = {rooms[12]}
    rids = {r: (f"{rnd.getrandbits(128):032x}", f"{rnd.getrandbits(128):032x}") for r in rooms}
    plog: list[tuple[float, str]] = []
    dlog: list[tuple[float, str]] = []
    ptrace: list[dict] = []
    dtrace: list[dict] = []
    off = decode_offset_s

    def dl(t_true: float, text: str, ranks: str = " DP0 TP0") -> None:
        t = t_true + off
        dlog.append((t, f"[{_stamp(t)}{ranks}] {text}"))

    def pl_(t_true: float, text: str, ranks: str = " DP0 TP0") -> None:
        plog.append((t_true, f"[{_stamp(t_true)}{ranks}] {text}"))

    def pt(t: float, room: int, **kw) -> None:
        ptrace.append(
            {
                "ts": round(t, 6),
                "host": PREFILL,
                "pid": 1842217,
                "side": "prefill",
                "engine_rank": 0,
                "room": room,
                **kw,
            }
        )

    def dtr(t_true: float, room: int, **kw) -> None:
        dtrace.append(
            {
                "ts": round(t_true + off, 6),
                "host": DECODE,
                "pid": 90412,
                "side": "decode",
                "engine_rank": 0,
                "room": str(room),
                **kw,
            }
        )

    # warmup: room 0 on both sides, must never reach `rooms`
    pl_(t_base - 5, "Receive: obj=GenerateReqInput(rid='warm', bootstrap_host='2.2.2.2', bootstrap_room=0)", "")
    dl(t_base - 5, "Receive: obj=GenerateReqInput(rid='warm', bootstrap_host='2.2.2.2', bootstrap_room=0)", "")
    for i, room in enumerate(rooms):
        t0 = t_base + i * 0.77 + rnd.random() * 0.2
        rid_p, rid_d = rids[room]
        dl(
            t0,
            f"Receive: obj=GenerateReqInput(rid='{rid_d}', bootstrap_host='10.0.0.1', bootstrap_port=8998, "
            f"bootstrap_room={room}, bootstrap_pair_key=None)",
            "",
        )
        if room in decode_only:
            dl(
                t0 + 300,
                f"Decode transfer failed for request rank=0 decode_req.req.rid='{rid_d}' "
                f"decode_req.req.bootstrap_room={room} with exception KVTransferError(bootstrap_room={room}): "
                f"Request {room} timed out after 300.0s in KVPoll.WaitingForInput",
            )
            continue
        pl_(
            t0 + 0.01,
            f"Receive: obj=GenerateReqInput(rid='{rid_p}', bootstrap_host='10.0.0.1', bootstrap_port=8998, "
            f"bootstrap_room={room}, bootstrap_pair_key=None)",
            "",
        )
        t_boot = t0 + 0.04 + rnd.random() * 0.03
        pl_(t_boot, f"got info room={room} agent_name='{D_AGENT}' required_dst_info_num=1")
        t = t_boot + 0.05
        n_chunks = 2
        for c in range(n_chunks):
            last = c == n_chunks - 1
            ck = f"{rnd.getrandbits(64):016x}"
            pt(
                t - 0.001,
                room,
                kind="kv",
                chunk=c,
                is_last=last,
                event="checksum",
                bytes=1 << 20,
                checksum=ck,
                checksum_algo="xxh64",
            )
            pt(t, room, rid=rid_p, kind="kv", chunk=c, is_last=last, event="post", bytes=1 << 20, peer=D_AGENT)
            pl_(t, f"sending kvcache to {D_AGENT} with notif {room}_kv_{c}_{int(last)}_0")
            lat = 0.001 + rnd.random() * 0.02
            if room in failed and last:
                pt(
                    t + lat,
                    room,
                    kind="kv",
                    chunk=c,
                    is_last=last,
                    event="fail",
                    status="NIXL_ERR_BACKEND",
                    peer=D_AGENT,
                    error="getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
                )
                pl_(t + lat, f"NIXL transfer encountered ERR room={room}")
                dtr(
                    t + 5,
                    room,
                    kind="kv",
                    event="abort",
                    error=f"KVTransferError(bootstrap_room={room}): Aborted by AbortReq.",
                )
                dl(
                    t + 5,
                    f"Decode transfer failed for request rank=0 decode_req.req.rid='{rid_d}' "
                    f"decode_req.req.bootstrap_room={room} with exception "
                    f"KVTransferError(bootstrap_room={room}): Aborted by AbortReq.",
                )
                break
            pt(t + lat * 0.5, room, kind="kv", chunk=c, is_last=last, event="done", status="NIXL_SUCCESS", peer=D_AGENT)
            dtr(t + lat, room, rid=rid_d, kind="kv", chunk=c, is_last=last, event="notif", peer=P_AGENT)
            dck = ck if room not in mismatched or c != 0 else f"{(int(ck, 16) ^ 0xFF):016x}"
            dtr(
                t + lat + 0.002,
                room,
                kind="kv",
                chunk=c,
                is_last=last,
                event="checksum",
                bytes=1 << 20,
                checksum="0x" + dck.upper(),
                checksum_algo="xxh64",
            )
            t += 0.03
        else:
            pt(t, room, kind="aux", is_last=True, event="post", bytes=5120, peer=D_AGENT)
            pt(t + 0.0005, room, kind="aux", is_last=True, event="done", status="NIXL_SUCCESS", peer=D_AGENT)
            dtr(t + 0.001, room, kind="aux", event="notif", peer=P_AGENT)
            dl(
                t0 + 1.5,
                f"Finish: obj=GenerateReqInput(rid='{rid_d}', bootstrap_room={room}), out={{'meta_info': "
                f"{{'id': '{rid_d}', 'finish_reason': {{'type': 'stop', 'matched': 1}}, 'prompt_tokens': 100, "
                f"'completion_tokens': 20, 'cached_tokens': 0, 'e2e_latency': 1.5}}}}",
                "",
            )
    for host, log, trace in ((PREFILL, plog, ptrace), (DECODE, dlog, dtrace)):
        d = root / host
        d.mkdir(parents=True, exist_ok=True)
        log.sort(key=lambda x: x[0])
        (d / f"{'prefill' if host == PREFILL else 'decode'}.log").write_text("".join(t + "\n" for _, t in log))
        (d / f"kvtrace-{host}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in trace))
    return Truth(decode_offset_s, rooms, mismatched, failed, decode_only, rids)
