"""What the agents reply: clean, corrupted and hard-negative texts."""

from __future__ import annotations

import datetime as dt
import math
import random

from tools.pdincident.records import hexid
from tools.pdincident.scenario import UTC

# ---------------------------------------------------------------------------------------------
# reply texts (docs/formats/TRANSCRIPTS.md, "Corrupted replies reported in public"; hard negatives in the shape engineers write)

TOPICS = [
    "the config loader",
    "the retry wrapper",
    "the session cache",
    "the request router",
    "the log shipper",
    "the benchmark harness",
    "the KV pool sizing",
    "the tokenizer warmup",
    "the health probe",
    "the CLI parser",
]
FILES = ["app/config.py", "app/router.py", "serve/launch.sh", "bench/run_c60.py", "app/cache.py", "tests/test_io.py"]


def clean_text(rng: random.Random) -> str:
    topic, f = rng.choice(TOPICS), rng.choice(FILES)
    parts = [
        f"I looked at {topic} in {f}. The failure comes from the default being read before the "
        f"environment is parsed, so the second call sees a stale value.",
        "I'll move the lookup after argument parsing and add a test that sets the variable first.",
        f"The change is small: one function moves, and {topic} keeps its public signature.",
        "After that the suite passes locally; the flaky case was the one that depended on import order.",
        "Next I will run the benchmark at low and high concurrency to check that nothing regressed.",
    ]
    return " ".join(parts[: rng.randint(2, 5)])


def corrupted_text(kind: str, rng: random.Random) -> tuple[str, str]:
    """(content, reasoning) of a corrupted reply of the given kind."""
    f = rng.choice(FILES)
    if kind == "dsml_leak":
        body = (
            f'Reading the file first.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="read">\n'
            f'<｜DSML｜parameter name="filePath" string="true">/home/dev/{f}</｜DSML｜parameter>\n'
            f"</｜DSML｜invoke>"
        )
        if rng.random() < 0.5:
            body += "\n</｜DSML｜function_calls>"
        return body, "Need to read the file."
    if kind == "repetition":
        unit = rng.choice(["I'll write() ", "the the ", "1. [1]  ", "!", "<invoke> "])
        # S12 judges texts of 200 chars and more; a degenerate reply runs on until max_tokens anyway
        n = math.ceil(rng.randint(260, 700) / len(unit))
        return f"Now I will update {f}. " + unit * n, ""
    if kind == "script_switch":
        return (
            f"The loader in {f} should be separable by常规的方法处理 before the second pass, and then "
            f"we 需要检查 the cache keys again 因为 they are stale when the 配置 is reloaded, so the fix is "
            f"to 重新 read the value."
        ), ""
    if kind == "token_salad":
        words = ["but", "about", "you", "ins", "3", "Q", "/", "a", "of", "it", "to", "e", "x", ",", "-", "is"]
        salad = " ".join(rng.choice(words) for _ in range(rng.randint(60, 110)))
        return f"Let me check {f}. " + salad, ""
    if kind == "think_leak":
        return (
            f"I need to look at {f} before changing it.</think>The file defines the loader; I will "
            f"change the default.</think> Then run the tests."
        ), ""
    raise ValueError(kind)


HARD_NEGATIVE_KINDS = (
    "quoted_log",
    "traceback",
    "hex_ids",
    "table",
    "inline_code",
    "long_report",
    "fenced_dsml",
    "cjk_reply",
)


def hard_negative_text(kind: str, rng: random.Random, room: int, rid: str, t: float) -> tuple[str, str]:
    d = dt.datetime.fromtimestamp(t, UTC)
    r = rng.randint(0, 3)
    if kind == "quoted_log":
        return (
            f"The decode host logged this right before the client saw the 500:\n\n"
            f"> [{d:%Y-%m-%d %H:%M:%S} DP{r} TP{r} EP{r}] Decode transfer failed for request rank={r} "
            f"decode_req.req.rid='{rid}' decode_req.req.bootstrap_room={room} with exception "
            f"KVTransferError(bootstrap_room={room}): Request {room} timed out after 300.0s in "
            f'KVPoll.WaitingForInput\n> [{d:%Y-%m-%d %H:%M:%S}] INFO:     10.0.0.5:51622 - "POST /generate '
            f'HTTP/1.1" 500 Internal Server Error\n\n'
            f"So the decode side gave up waiting for the KV of room {room}; the prefill side never sent it. "
            f"I'd check whether the prefill bootstrap queue was draining at that time."
        ), ""
    if kind == "traceback":
        return (
            "The worker died with this traceback:\n\n"
            "Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 1153, in transfer_worker\n'
            "    state_xfer_handles = self.maybe_send_extra(\n"
            "                         ^^^^^^^^^^^^^^^^^^^^^^\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py", line 2062, in maybe_send_extra\n'
            "    raise RuntimeError(\n"
            "RuntimeError: NIXL transfer encountered ERR room=%d\n\n"
            "It is raised from the state path, not from the KV pages, so only the extra buffers failed." % room
        ), ""
    if kind == "hex_ids":
        ids = [hexid(rng) for _ in range(4)]
        return (
            f"The four requests that failed were {ids[0]}, {ids[1]}, {ids[2]} and {ids[3]}. Their agents "
            f"were 8f3e2a1c-5b7d-4e9f-a0b1-c2d3e4f5a6b7 and def7d2f1-d482-4cd2-b6de-f238da5a9c70, and the "
            f"checksums differ: 0x9a41c07e55d2b3f1 on prefill vs 0xc51e07a2990b13d8 on decode for room {room}."
        ), ""
    if kind == "table":
        rows = "\n".join(
            f"| {i} | {room + i} | {rng.choice(['ok', 'timeout', 'abort'])} | {rng.randint(1, 9)}.{rng.randint(0, 9)} s |"
            for i in range(6)
        )
        return (
            "Per rank, what the rooms did:\n\n| rank | room | state | wait |\n|---|---|---|---|\n"
            + rows
            + "\n\nRank 2 is the one that stopped; the others went on."
        ), ""
    if kind == "inline_code":
        return (
            "Set `SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600` and `--decode-log-interval 40`, then watch "
            "`#transfer-req`, `#prealloc-req` and `#retracted-req` in the `Decode batch` lines; if "
            "`KVPoll.WaitingForInput` shows up with `bootstrap_room=0`, it is the `HEALTH_CHECK_` rid, "
            "not a user request. `x = a[i:j]`, `f(**kw)`, `0x7f3a`, `</think>` are just tokens here."
        ), ""
    if kind == "long_report":
        paras = []
        for i in range(6):
            paras.append(
                f"## {i + 1}. {rng.choice(['Symptoms', 'Timeline', 'Root cause', 'Evidence', 'Fix', 'Next steps'])}\n\n"
                f"- At 14:{10 + i:02d} the decode host stopped printing `Decode batch` lines while "
                f"`/health` kept answering; `#running-req` was {rng.randint(10, 40)} before that.\n"
                f"- The prefill side had `#bootstrap-req: {rng.randint(0, 30)}` and "
                f"`#inflight-req: {rng.randint(0, 30)}`; throughput fell from {rng.randint(20, 40)}k to 0 tok/s.\n"
                f"- Rooms like {room + i} timed out after 300.0 s (`KVPoll.WaitingForInput`), the "
                f"prefill side two seconds later (`KVPoll.Bootstrapping`).\n\n"
                f"The benchmark at C=1 gave {rng.randint(40, 60)}.{rng.randint(0, 9)} tok/s and at C=32 "
                f"{rng.randint(400, 600)}.{rng.randint(0, 9)} tok/s, within noise of the baseline."
            )
        return "# Incident report\n\n" + "\n\n".join(paras), "Summarise the incident for the user."
    if kind == "fenced_dsml":
        return (
            "The parser leaked markup like this into `content`:\n\n```\n<｜DSML｜function_calls>\n"
            '<｜DSML｜invoke name="read">\n<｜DSML｜parameter name="filePath" string="true">app/config.py'
            "</｜DSML｜parameter>\n</｜DSML｜invoke>\n```\n\nThe fix is to require the end token before "
            "emitting a call."
        ), ""
    if kind == "cjk_reply":
        return (
            "这个问题是因为解码端在等待 KV 传输时超时了。`KVPoll.WaitingForInput` 表示解码端已经分配了内存，"
            "但是预填充端没有发送数据。建议先检查预填充端的 `#bootstrap-req` 队列。"
        ), ""
    raise ValueError(kind)
