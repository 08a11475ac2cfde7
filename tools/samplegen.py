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
import datetime as dt
import gzip
import heapq
import json
import pathlib
import random
import sys

from tools import loglines

UTC = dt.timezone.utc
T0 = int(dt.datetime(2026, 11, 20, 14, 0, 0, tzinfo=UTC).timestamp())

# -- deployment -------------------------------------------------------------------------------
MODEL = "deepseek-v3.2"
MODEL_PATH = "deepseek-ai/DeepSeek-V3.2"
PREFILL = "prefill-0"
DECODES = ("decode-0", "decode-1")
HOSTS = (PREFILL,) + DECODES
HOST_IP = {"prefill-0": "10.0.0.2", "decode-0": "10.0.0.3", "decode-1": "10.0.0.4"}
ROUTER_IP = "10.0.0.10"
BOOTSTRAP_PORT = 8998
FAKE_BOOTSTRAP_HOST = "2.2.2.2"
DP = 4
CLOCK_OFFSET = {"prefill-0": 0.0, "decode-0": 0.0, "decode-1": 2.5}  # host clock minus true UTC
MAIN_PID = {"prefill-0": 2380, "decode-0": 3050, "decode-1": 3188}
SCHED_PID0 = {"prefill-0": 2411, "decode-0": 3102, "decode-1": 3240}
MAX_TOTAL_P = 1048576
MAX_TOTAL_D = 1245184
CHUNK = 8192  # --chunked-prefill-size
MAX_PREFILL = 16384  # --max-prefill-tokens
PAGE = 64
KV_BYTES_PER_TOKEN = 61 * 656  # DeepSeek MLA fp8 KV, 61 layers
INDEXK_BYTES_PER_TOKEN = 61 * 256  # DSA indexer K in bf16 (no scale), 61 layers
AUX_BYTES = 9216
XFER_BW = 18e9  # bytes/s per rank pair
DECODE_LOG_INTERVAL = 100
PREFILL_RATE = 4200.0  # prefill tokens/s per DP rank at scale 1

# -- timeline (seconds after T0, true UTC) ------------------------------------------------------
LOG_START = -95.0
SLAM = (270.0, 390.0)
SWARM_START, SWARM_KILL, SWARM_SESSIONS = 590.0, 597.0, 80
SWARM_TO_DECODE0 = 44
W0 = 603.5  # decode-1's last stats line before its wedge; on decode-1's clock this is 14:10:06 exactly
# The wedge ends when the scheduler's loop runs again and times out every room that waited past
# SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s): the stuck rooms entered the wait 2-6 s before W0.
W1 = W0 + 300.5
WAIT_TIMEOUT = 300.0
STUCK_BOOT, STUCK_KV = 20, 4  # stuck rooms whose metadata never reached prefill / whose KV landed unconsumed
BOOT_LAG = 2.0  # the prefill side's bootstrap timeout of a stuck room follows the decode side's by about this
LAST_LINE = (0.9, 0.6, 0.3, 0.0)  # per decode-1 DP rank: its last stats line, seconds before W0
KUBELET_IP = "10.0.1.4"  # decode-1's node: kubelet probes the pod from there
PROBE_S = 5.0  # kubelet /health probe period on decode-1
HEALTH_CHECK_TIMEOUT = 20.0  # SGLANG_HEALTH_CHECK_TIMEOUT
HEALTH_FAIL_S = 30.0  # cadence of the generate-based check that logs `Health check failed` while wedged
WEDGE_JOBS = 10  # one-shot jobs that keep arriving at the wedged decode-1, one every WEDGE_JOB_S
WEDGE_JOB_S = 28.0
F0 = 1100.0  # UCX link fault window start
FAULT_LEN = 8.0
FAULT_PATH = (2, "decode-0", 1)  # prefill DP rank -> decode host, decode DP rank
ARR_END = 1170.0
ROTATE_AT = 720.0  # decode-0/sglang.log.1.gz holds the lines before 14:12:00
ELEVATED_AFTER = 30.0
P_BASE, P_HIGH = 0.05, 0.30
P_AFTER_FAIL = 0.5  # bad replies follow a failed transfer on the same decode instance within seconds (docs/formats/NIXL.md, "Silent corruption mechanisms", M1)

DSML = "｜DSML｜"  # U+FF5C around DSML
EOS = "<｜end▁of▁sentence｜>"  # U+FF5C, U+2581

# Line kinds of the server logs, as counted in planted.json["files"][...]["kinds"]: the first rule
# whose regex matches (re.search on the line after the CRI prefix is stripped) gives the kind.
LINE_KIND_RULES = [
    ("prefill_stats", r"^\[[^\]]+\] Prefill batch, "),
    ("decode_stats", r"^\[[^\]]+\] Decode batch, "),
    ("request_received", r"^\[[^\]]+\] Receive: obj=GenerateReqInput\("),
    ("request_finished", r"^\[[^\]]+\] Finish: obj=GenerateReqInput\("),
    ("http_access", r'^\[[^\]]+\] INFO:     \d+\.\d+\.\d+\.\d+:\d+ - "'),
    ("uvicorn", r"^\[[^\]]+\] (INFO|WARNING|ERROR): +"),
    ("transfer_failed", r"^\[[^\]]+\] (Prefill|Decode) transfer failed for request "),
    ("bootstrap_failed", r"^\[[^\]]+\] Prefill bootstrap failed for request "),
    ("health_check_failed", r"^\[[^\]]+\] Health check failed\. "),
    ("abort", r"^\[[^\]]+\] Abort request for rid="),
    ("exception", r"^\[[^\]]+\] Unexpected transfer worker error for room \d+$"),
    ("corruption_detected", r"^\[[^\]]+\] Context corruption detected: "),
    ("checksum_mismatch", r"^\[[^\]]+\] KV checksum mismatch req="),
    ("log", r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?: [A-Z_]+\d+)*\] "),
    ("nixl", r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [\w.]+:\d+\] "),
    ("nixl_py", r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} NIXL [A-Z]+ +"),
    ("ucx", r"^\[\d+\.\d{6}\] \[[\w.-]+:\d+ *:\d+\] +[\w.]+:\d+ +UCX +[A-Z]+ "),
    ("traceback", r"^(Traceback \(most recent call last\):|  File \"|    |[A-Za-z_][\w.]*(Error|Exception): )"),
]
CRI_RE = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z stdout F "

# -- time formatting ------------------------------------------------------------------------------


def _split(t: float) -> tuple[dt.datetime, int]:
    us = int(round(t * 1_000_000))
    s, f = divmod(us, 1_000_000)
    return dt.datetime.fromtimestamp(s, UTC), f


def iso(t: float, digits: int = 6) -> str:
    d, f = _split(t)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{f:06d}"[: 20 + digits] + "Z"


def _pfx_time(t: float) -> str:
    d, _ = _split(t)
    return f"{d:%Y-%m-%d %H:%M:%S}"


def _ms(t: float) -> int:
    return int(t * 1000)


# -- ids --------------------------------------------------------------------------------------------


def _hex(rng: random.Random, n: int) -> str:
    return "%0*x" % (n, rng.getrandbits(4 * n))


def _uuid4(rng: random.Random) -> str:
    b = rng.getrandbits(128)
    b = (b & ~(0xF << 76)) | (4 << 76)
    b = (b & ~(0x3 << 62)) | (0x2 << 62)
    h = f"{b:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class _OcIds:
    """opencode's ascending ids: <prefix>_<12 hex of ms*0x1000+counter><14 base62>."""

    def __init__(self, rng: random.Random):
        self.rng, self.last = rng, (0, 0)

    def __call__(self, prefix: str, t: float) -> str:
        ms = _ms(t)
        c = self.last[1] + 1 if ms <= self.last[0] else 0
        ms = max(ms, self.last[0])
        self.last = (ms, c)
        v = (ms * 0x1000 + c) & ((1 << 48) - 1)
        return f"{prefix}_{v:012x}" + "".join(self.rng.choice(_B62) for _ in range(14))


# -- text banks ----------------------------------------------------------------------------------

TOOLS = {
    "read": (
        "Read a file from the workspace.",
        {"filePath": "string", "offset": "integer", "limit": "integer"},
        ["filePath"],
    ),
    "grep": ("Search file contents with a regex.", {"pattern": "string", "path": "string"}, ["pattern"]),
    "bash": ("Run a shell command.", {"command": "string", "timeout": "integer"}, ["command"]),
    "write": ("Write a file.", {"filePath": "string", "content": "string"}, ["filePath", "content"]),
    "edit": (
        "Replace text in a file.",
        {"filePath": "string", "oldString": "string", "newString": "string"},
        ["filePath", "oldString", "newString"],
    ),
}
SRC = "/home/dev/sglang/python/sglang/srt"
FILES = [
    f"{SRC}/disaggregation/nixl/conn.py",
    f"{SRC}/disaggregation/decode.py",
    f"{SRC}/disaggregation/prefill.py",
    f"{SRC}/mem_cache/memory_pool_host.py",
    f"{SRC}/managers/scheduler.py",
    f"{SRC}/layers/attention/nsa_backend.py",
    f"{SRC}/disaggregation/common/conn.py",
    f"{SRC}/managers/scheduler_components/metrics_reporter.py",
]
GREPS = [
    "get_index_k_with_scale_buffer",
    "wait_layer_transfer",
    "KVPoll.WaitingForInput",
    "def transfer_worker",
    "NIXL_ERR_SETTLE_TIMEOUT_S",
    "on_idle",
    "metadata_buffer_index",
    "index_k_host",
]
BASH = [
    "python -m pytest test/srt/test_disaggregation_pd.py -x -q",
    "git log --oneline -8",
    "grep -c 'Decode transfer failed' /var/log/sglang/decode-1.log",
    "nvidia-smi --query-gpu=memory.used --format=csv",
    "python repro_agent.py --sessions 60 --turns 12",
    "ls ocbrowse/ses_3f023736bffe5l8DNFRJbsYbwc_analysis/articles/seg_0",
]
REASONING = [
    "The failure only shows up under concurrency, so the shared path between transfer and reuse is the suspect.",
    "I need to see where the decode side frees pages after an abort before touching anything.",
    "The index-K buffer is read without waiting for the layer transfer; checking whether the host mirror is involved.",
    "Before changing the sizing I want the exact layout the device pool uses for bf16 keys.",
    "The article needs the timeline first; reading the chunk to get the order of events.",
    "Tests should cover low and high concurrency, so I will run the repro at both.",
    "The wedge started right after a mass abort; the scheduler loop is the place to look.",
    "Let me confirm the notification format before parsing chunk indices out of it.",
]
SHORT_CONTENT = [
    "",
    "",
    "",
    "Checking the transfer path first.",
    "Reading the relevant code.",
    "Running the repro.",
    "Let me look at the abort handling.",
    "Writing the article now.",
]
REVIEW_TASKS = [
    "Review the NIXL transfer worker change in disaggregation/nixl/conn.py and flag anything that can free decode pages early.",
    "Check the abort path in disaggregation/decode.py for requests that are still in the transfer queue.",
    "Confirm that memory_pool_host.py sizes the index-K host buffer from the device dtype.",
    "Summarise the failing tests in test/srt/test_disaggregation_pd.py and propose a fix.",
    "Audit the exception handling of the prefill bootstrap thread in the NIXL manager.",
]
OPENCODE_TASKS = [
    "decode-1 stopped making progress right after I killed the 80-session agent. Find out why.",
    "Add a checksum of the index-K buffer on both sides of the transfer and log mismatches.",
    "Why do agents lose the plot when the writer agent starts? Check the prefill path.",
    "Benchmark C=1 and C=32 with overlap scheduling disabled and compare.",
    "Write the long-form report on the bf16 transfer wedge, DSV4_BF16_WEDGE.md.",
]
ZH_TASKS = ["请总结一下 decode-1 在中止风暴之后卡住的原因。", "用中文解释一下为什么索引缓冲区的大小会影响传输。"]
ZH_REPLIES = [
    "根据日志，`decode-1` 在大量请求被中止之后调度器停止了工作，大约五分钟没有统计行，健康检查一直返回 503。这段时间里仍有请求在等待传输完成，"
    "恢复之后它们都因为等待超时而失败。建议先检查调度器是否卡在集合通信上，再决定是否关闭重叠调度。",
    "索引缓冲区的大小决定了每个请求需要传输的数据量。如果主机端镜像按照旧的布局分配，而设备端使用了新的布局，"
    "拷贝时就会读到错误的数据，稀疏注意力选出的位置也会随之出错。修复方法是按照设备端的数据类型来计算主机端缓冲区的大小。",
]
FINAL_EN = [
    "The abort path releases the decode pages as soon as the room is marked failed, while a sibling WRITE can still "
    "be in flight. That matches the timing of the bad replies: they start within seconds of a failed transfer on the "
    "same decode instance. The fix is to keep the pages pinned until every handle of the batch has settled.",
    "The host mirror of the index-K pool is sized from the fp8 layout (132 bytes per token) while the device pool "
    "holds bf16 keys (256 bytes per token). Copies between the two therefore overrun the slot and corrupt the keys "
    "of reused prefixes. Sizing the mirror from the device dtype removes the overrun.",
    "Both benchmarks completed without errors. At C=1 throughput is unchanged; at C=32 it is about four percent lower "
    "with overlap scheduling disabled, which is an acceptable price for not wedging after a mass abort.",
    "The wedge is a collective desync: after the mass abort some ranks enter the all-reduce of the next batch while "
    "others branch to the idle path. The health check turned 503 within twenty seconds, but the router kept sending "
    "requests to the stuck instance until the transfer timeouts fired.",
]
ARTICLE = [
    "The message arrived after a long night of bisection. The corruption only appeared when sixty or more sessions "
    "ran at once, and it looked like the model forgetting how to call tools.",
    "What changed the direction of the investigation was a single observation: the same model, served by a cloud "
    "provider, never produced the garbled markup, no matter how many sessions were running.",
    "The decisive test disabled the hierarchical cache. Corruption fell to zero at sixty sessions, and the stuck "
    "transfers that had preceded every wedge disappeared with it.",
    "In hindsight the timeline was clear. Each burst of bad replies followed a failed transfer on the same decode "
    "instance by a few seconds, long enough for a late write to land in pages that had already been reused.",
    "The user's reply reordered the work: write the report first, then fix the wedge, and only then return to the "
    "cache. Evidence before fixes, benchmarks at low and high concurrency, and frequent commits.",
]
TOOL_RESULTS = {
    "read": [
        "1148|    def transfer_worker(self, queue):\n1149|        while True:\n1150|            batch = queue.get()",
        "210|    def _alloc_index_k(self, size):\n211|        # one row per token\n212|        self.index_k_host = torch.empty((size, 132), dtype=torch.uint8)",
    ],
    "grep": [
        "memory_pool_host.py:212:        self.index_k_host = torch.empty((size, 132), dtype=torch.uint8)",
        "nixl/conn.py:1288:            state = self.agent.check_xfer_state(handle)\ndecode.py:611:        if poll == KVPoll.WaitingForInput:",
    ],
    "bash": [
        "4 passed, 1 failed in 38.21s",
        "a91c2e4 disable overlap schedule for PD decode\n77d0b13 size index-K host pool from device dtype",
        "41",
        "msg_0_0_7.md\nmsg_0_0_10.md\nmsg_0_0_11.md",
        "C=1: 54.3 tok/s\nC=32: 529.6 tok/s, 0 errors",
    ],
    "write": ["Wrote file successfully."],
    "edit": ["Edit applied successfully."],
}


def _fenced_markup() -> str:
    return (
        "The leak is easy to recognise once you know the shape. A well-formed V3.2 completion ends with a "
        "complete wrapper, for example:\n\n```\n"
        f'<{DSML}function_calls>\n<{DSML}invoke name="read">\n'
        f'<{DSML}parameter name="filePath" string="true">conn.py</{DSML}parameter>\n'
        f"</{DSML}invoke>\n</{DSML}function_calls>\n```\n\n"
        "When the detector fails, that text lands in `content` and `tool_calls` stays empty. The parser change only "
        "affects the streaming path, so non-stream requests are not affected."
    )


def _table_reply(rng: random.Random) -> str:
    rows = [f"| DP{r} | ok | {rng.randint(380, 460)} | 0 |" for r in range(DP)]
    same = "| 14:09:57 | decode-0 | Aborted by AbortReq. |"
    return (
        "Per-rank status after the restart:\n\n| rank | state | transfers | failures |\n|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nThe abort lines in the storm window all carry the same reason:\n\n| time | host | reason |\n|---|---|---|\n"
        + "\n".join([same] * 4)
        + "\n| 14:09:58 | decode-1 | Aborted by AbortReq. |\n\nNo rank reports failures since the restart."
    )


def _quoted_log_reply(g: "_Gen", r: "Req") -> tuple[str, list[dict]]:
    """A clean reply that quotes server log lines the incident wrote: storm aborts in a `>` quote,
    then, in fences, an excerpt of decode-1's wedge and the link fault's traceback once they happened.

    Returns the text and what it quotes: {file, text, how}: `how` "quote" is a line's message (after
    its prefix) behind `> `, "fence" a whole line (after the CRI wrapper) inside the fence."""

    def recs(h):
        return sorted(g.lines[h], key=lambda x: (x[0], x[1]))

    def render(h, x):
        t, _, _, style, rank, msg = x
        pt = _pfx_time(t + CLOCK_OFFSET[h])
        if style == "sg":
            return loglines.sglang(pt, loglines.dp_tags(rank), msg)
        return loglines.sglang(pt, "", msg) if style == "pl" else msg

    aborts = [x[5] for x in recs("decode-0") if x[2] == "transfer_failed" and loglines.ABORTED in x[5] and x[4] == 1][
        :3
    ]
    quoted = [dict(file="decode-0/sglang.log.1.gz", text=a, how="quote") for a in aborts]
    text = (
        "decode-0 logged the abort storm as one transfer failure per request that was still waiting for its "
        "KV when the 80-session agent was killed, for example on DP1:\n\n"
        + "\n".join(f"> {a}" for a in aborts)
        + "\n\n"
        "That is the client going away (`Aborted by AbortReq.`), not a broken transfer."
    )
    if r.t_arr > T0 + W1:
        d1 = recs("decode-1")
        last = max((x for x in d1 if x[2] == "decode_stats" and x[0] <= T0 + W0), key=lambda x: x[0])
        fail = next(x for x in d1 if x[2] == "health_check_failed")
        probe = next(x for x in d1 if x[2] == "http_access" and " 503 " in x[5] and x[0] > fail[0])
        timeout = next(x for x in d1 if x[2] == "transfer_failed" and "KVPoll.WaitingForInput" in x[5])
        block = [render("decode-1", x) for x in (last, fail, probe, timeout)]
        quoted += [dict(file="decode-1/sglang.log", text=ln, how="fence") for ln in block]
        text += (
            " decode-1 is the real problem. Its scheduler printed its last stats line and then nothing for five "
            "minutes, while the HTTP side kept answering:\n\n```\n"
            + "\n".join(block[:3])
            + "\n...\n"
            + block[3]
            + "\n```\n\nThe health check saw it (503 from the first failed check on), and every room "
            "that was waiting for KV timed out when the loop ran again."
        )
    pre = recs(PREFILL)
    i = next((i for i, x in enumerate(pre) if x[2] == "exception"), None)
    if i is not None and pre[i][0] < r.t_arr:
        block = [render(PREFILL, pre[i])] + [x[5] for x in pre[i + 1 :] if x[2] == "traceback" and x[0] == pre[i][0]]
        quoted += [dict(file="prefill-0/sglang.log", text=ln, how="fence") for ln in block]
        text += (
            "\n\nThe transfer errors came later, from prefill DP2:\n\n```\n"
            + "\n".join(block)
            + "\n```\n\nThe UCX link fault surfaced through `check_xfer_state`; the rooms on that path failed with "
            "`NIXL transfer encountered ERR`, and the retries went through once the link recovered."
        )
    return text, quoted


def _dsml_invoke(rng: random.Random) -> str:
    name, args = _tool_call(rng, "reviewer")
    params = []
    for k, v in args.items():
        sv = v if isinstance(v, str) else json.dumps(v)
        params.append(
            f'<{DSML}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">{sv}</{DSML}parameter>'
        )
    return f'<{DSML}invoke name="{name}">\n' + "\n".join(params) + f"\n</{DSML}invoke>"


def _leak_text(rng: random.Random, subtype: str) -> tuple[str, str]:
    """(content, reasoning) of a parse-leak reply."""
    invoke = _dsml_invoke(rng)
    lead = rng.choice(
        [
            "Reading both call sites.",
            "Let me open the file.",
            "Checking the transfer worker.",
            "I'll look at the abort path next.",
            "Running the tests again.",
        ]
    )
    reasoning = rng.choice(REASONING)
    if subtype == "dsml_in_content":
        if rng.random() < 0.5:
            invoke += "\n" + _dsml_invoke(rng)
        return f"{lead}\n\n<{DSML}function_calls>\n{invoke}\n</{DSML}function_calls>", reasoning
    if subtype == "dsml_with_eos":  # decoded with skip_special_tokens=False: EOS leaks too
        return f"{lead}\n\n<{DSML}function_calls>\n{invoke}\n</{DSML}function_calls>{EOS}", reasoning
    if subtype == "unterminated_dsml":
        return (
            f'{lead}\n\n<{DSML}function_calls>\n{invoke}\n<{DSML}invoke name="{rng.choice(list(TOOLS))}">\n',
            reasoning,
        )
    if subtype == "bare_invoke":
        return f"{lead}\n\n{invoke}", reasoning
    # dsml_in_reasoning: the model skipped </think>, the block stays in reasoning_content
    return "", f"{reasoning}\n\n<{DSML}function_calls>\n{invoke}\n</{DSML}function_calls>"


CJK_BITS = [
    "但是这个缓冲区的",
    "常规的旧数据",
    "完全错误",
    "然后",
    "错误的上下文",
    "消失了",
    "索引键",
    "传输队列",
    "重新开始",
    "页面已经释放",
    "我们需要",
]
LOOP_UNITS = [
    "I'll write() ",
    "the index keys ",
    "Let me check ",
    "write(",
    '<invoke name="write"> ',
    "1. [1] ",
    "and then the ",
    "!!",
]


def _incoherent_text(rng: random.Random, subtype: str) -> str:
    if subtype == "repetition_loop":
        lead = rng.choice(
            [
                "Now I'll write the article for this chunk. ",
                "Reading the next file. ",
                "The transfer completed, so ",
                "",
            ]
        )
        unit = rng.choice(LOOP_UNITS)
        return lead + unit * max(24, 260 // len(unit) + rng.randint(0, 12))
    if subtype == "script_switch":
        words = rng.choice(FINAL_EN + ARTICLE).split(" ")
        alpha = lambda w: w.isascii() and w.isalpha()  # noqa: E731
        for _ in range(rng.randint(3, 5)):
            slots = [i for i in range(1, len(words)) if alpha(words[i - 1]) and alpha(words[i])]
            words.insert(rng.choice(slots), rng.choice(CJK_BITS))
        return " ".join(words)
    words = [
        "ins",
        " ",
        "3",
        "Q",
        "/",
        "but",
        "but",
        "about",
        "you",
        "about",
        "you",
        ",",
        "k",
        "v",
        "the",
        ";",
        "of",
        "to",
        "(",
        ")",
        "]]",
        "s",
        "m",
        "!",
        "\ufffd",
        "a",
    ]
    return " ".join(rng.choice(words) for _ in range(rng.randint(70, 90)))


PARSE_LEAK = ("dsml_in_content", "dsml_with_eos", "unterminated_dsml", "bare_invoke", "dsml_in_reasoning")
INCOHERENT = ("repetition_loop", "script_switch", "token_salad")
SIGNATURES = {
    "dsml_in_content": ["S1", "S10"],
    "dsml_with_eos": ["S1", "S7", "S10"],
    "unterminated_dsml": ["S1", "S3", "S10"],
    "bare_invoke": ["S1", "S4", "S10"],
    "dsml_in_reasoning": ["S2", "S9"],
    "repetition_loop": ["S12"],
    "script_switch": ["S13"],
    "token_salad": ["S14"],
}

# -- simulation records ----------------------------------------------------------------------------


class Session:
    def __init__(self, sid: str, agent: str, source: str | None, worker: int | None, t: float):
        self.sid, self.agent, self.source, self.worker, self.t_start = sid, agent, source, worker, t
        self.reqs: list[Req] = []
        self.ctx = 0
        self.cache_hit = 0
        self.sys_tokens = 0
        self.turns_left = 0
        self.loop_left = 0
        self.loops = 0
        self.lang = "en"
        self.task = ""
        self.forced: str | None = None
        self.retry = False


class Req:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.p_rank = self.d_host = self.d_rank = None
        self.new_tokens = max(1, self.prompt - self.cached)
        self.done = 0
        self.kv_held = 0
        self.units: list[dict] = []
        self.t_prealloc = self.t_boot = self.t_pf_start = self.t_pf_end = None
        self.t_xfer_done = self.t_pf_fin = self.t_kv = self.t_start = self.t_fin = None
        self.t_dq_end = None  # end of decode transfer-queue membership
        self.t_resp = None
        self.segs: list[tuple[float, float]] = []
        self.speed = 0.0
        self.p_out = None  # 'ok' | 'aborted' | 'fail' | 'late_abort'
        self.d_out = (
            None  # 'ok' | 'aborted_transfer' | 'aborted_running' | 'fail' | 'timeout' | 'ctxcorrupt' | 'late_abort'
        )
        self.t_p_end = self.t_d_end = None
        self.t_pabort = self.t_dabort = None
        self.t_fail = None
        self.fail_unit = None
        self.corrupt = None  # (class, subtype)
        self.hard_negative = None
        self.ksum_mismatch = False


# -- the generator ------------------------------------------------------------------------------


class _Gen:
    def __init__(self, seed: int, scale: float):
        self.seed, self.scale = seed, scale
        self.rng = random.Random(seed)
        self.crng = random.Random(seed * 1_000_003 + 17)  # corruption choices (post-sim)
        self.trng = random.Random(seed * 1_000_033 + 29)  # text and transcript rendering
        self.rate = PREFILL_RATE * scale
        self.heap: list = []
        self.seq = 0
        self.rooms: set[int] = set()
        self.reqs: list[Req] = []
        self.sessions: list[Session] = []
        self.lines: dict[str, list] = {h: [] for h in HOSTS}
        self.pstats: list[dict] = []
        self.rr = {h: 0 for h in HOSTS}
        self.ranks = [
            dict(idx=r, queue=[], busy=False, last_line=None, kv=0, booting=[], inflight=[]) for r in range(DP)
        ]
        self.agents = {h: [_uuid4(self.rng) for _ in range(DP)] for h in HOSTS}
        self.ksum_rooms: list[Req] = []
        self.fault_reqs: list[Req] = []
        self.ctx_req: Req | None = None

    # -- small helpers --------------------------------------------------------------------------
    def push(self, t: float, kind: str, obj) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, obj))

    def room(self) -> int:
        while True:
            r = self.rng.randrange(10**18, 2**63)
            if r not in self.rooms:
                self.rooms.add(r)
                return r

    def rid(self) -> str:
        return _hex(self.rng, 32)

    def line(self, host: str, t: float, kind: str, style: str, msg, rank: int | None = None) -> None:
        self.seq += 1
        self.lines[host].append((t, self.seq, kind, style, rank, msg))

    def U(self, a: float, b: float) -> float:
        return self.rng.uniform(a, b)

    # -- agents ---------------------------------------------------------------------------------
    def new_session(self, agent: str, t: float, worker: int | None = None, forced: str | None = None) -> Session:
        source = {"opencode": "opencode", "reviewer": "proxy", "writer": "proxy", "swarm": None}[agent]
        s = Session(_hex(self.rng, 8), agent, source, worker, t)
        s.forced = forced
        rng = self.rng
        s.stream = agent in ("opencode", "swarm") or (agent == "writer" and rng.random() < 0.5)
        if agent == "opencode":
            s.sys_tokens = 11264
            s.ctx = s.sys_tokens + rng.randint(40, 400)
            s.loop_left = rng.randint(2, 7)
            s.lang = "zh" if worker == 1 else "en"
        elif agent == "reviewer":
            s.sys_tokens = 6144
            s.ctx = s.sys_tokens + rng.randint(2500, 9000)
            s.turns_left = rng.randint(4, 11)
        elif agent == "writer":
            s.sys_tokens = 3264
            s.ctx = s.sys_tokens + rng.randint(13000, 35000)
            s.turns_left = rng.randint(1, 2) if worker is None else rng.randint(2, 4)
        else:  # swarm
            s.sys_tokens = 2560
            s.ctx = s.sys_tokens + rng.randint(11000, 27000)
            s.turns_left = 1
        if forced in ("stuck",):
            s.ctx = s.sys_tokens + rng.randint(30000, 38000)
        elif forced:
            s.ctx = s.sys_tokens + rng.randint(1500, 4000)
        if forced:
            s.turns_left = 1
        s.cache_hit = s.sys_tokens if self.sessions and agent != "opencode" else 0
        self.sessions.append(s)
        return s

    def plan_turn(self, s: Session, t: float) -> Req:
        rng = self.rng
        if s.retry:
            prev = s.reqs[-1]
            prompt, cached, final = prev.prompt, prev.cached, prev.final
            completion, reasoning = prev.completion, prev.reasoning
            s.retry = False
        else:
            prompt = s.ctx
            hit = s.cache_hit if rng.random() < 0.88 else min(s.sys_tokens, s.cache_hit)
            cached = min(hit // PAGE * PAGE, prompt - 1)
            if s.agent == "opencode":
                final = s.loop_left <= 1
            else:
                final = s.turns_left <= 1
            if s.agent == "writer":
                completion = rng.randint(1400, 3800) if final else rng.randint(90, 520)
            elif s.agent == "reviewer":
                completion = rng.randint(300, 1400) if final else rng.randint(70, 600)
            elif s.agent == "opencode":
                completion = rng.randint(200, 1200) if final else rng.randint(60, 480)
            else:
                completion = rng.randint(200, 900)
            if s.forced == "hold":  # a long answer, still generating when decode-1 wedges
                completion = rng.randint(1600, 2600)
            reasoning = int(completion * rng.uniform(0.15, 0.55 if final else 0.7))
        stream = s.stream
        r = Req(
            idx=len(self.reqs),
            kind=s.agent,
            sess=s,
            turn=len(s.reqs),
            t_arr=t,
            prompt=prompt,
            cached=cached,
            completion=completion,
            reasoning=reasoning,
            final=final,
            stream=stream,
            max_new=32768 if s.agent == "writer" else 16384,
            room=self.room(),
            p_rid=self.rid(),
            d_rid=self.rid(),
            forced=s.forced,
            ksum=_hex(rng, 16),
            kv_ksum=rng.random() < 0.1,
        )
        s.reqs.append(r)
        self.reqs.append(r)
        return r

    def after_reply(self, r: Req, t: float, ok: bool) -> None:
        s = r.sess
        r.t_resp = t
        if s is None or s.forced or s.agent == "swarm":
            return
        rng = self.rng
        if not ok:
            s.retry = True
            self.push(t + rng.uniform(2.0, 5.0), "launch", s)
            return
        # context grows by the visible reply and the tool result
        s.cache_hit = r.prompt
        s.ctx = r.prompt + (r.completion - r.reasoning) + (0 if r.final else rng.randint(250, 3200))
        if s.agent == "opencode":
            s.loop_left -= 1
            if r.final:
                s.loops += 1
                s.loop_left = rng.randint(2, 7)
                s.ctx += rng.randint(30, 300)
                self.push(t + rng.uniform(25, 110), "launch", s)
            else:
                self.push(t + rng.uniform(0.4, 6.0), "launch", s)
            return
        s.turns_left -= 1
        if r.final or s.turns_left <= 0:
            if s.worker is not None:
                ns = self.new_session(s.agent, t, worker=s.worker)
                self.push(t + rng.uniform(10, 40), "launch", ns)
            return
        self.push(t + (rng.uniform(1.0, 8.0) if s.agent == "reviewer" else rng.uniform(0.3, 4.5)), "launch", s)

    # -- routing --------------------------------------------------------------------------------
    def route(self, r: Req) -> None:
        t = r.t_arr
        rel = t - T0
        route = getattr(r, "route", None)
        if route:
            p_rank, d_host, d_rank = route
        else:
            p_rank, d_host, d_rank = None, None, None
        if p_rank is None:
            p_rank = self.rr[PREFILL] % DP
            self.rr[PREFILL] += 1
        if d_host is None:
            if W0 - 12.0 <= rel < W1:
                # decode-1's last seconds before the wedge carry only the planted in-flight requests;
                # inside it the router's load-aware choice avoids a worker whose outstanding requests
                # only grow (the one-shot jobs pinned to decode-1 are routed in run())
                d_host = "decode-0"
            elif r.kind != "swarm" and SWARM_START <= rel < W0:
                d_host = "decode-1"  # decode-0 is loaded with the swarm's requests
            else:
                d_host = DECODES[self.rng.random() < 0.5]
        if d_rank is None:
            d_rank = self.rr[d_host] % DP
            self.rr[d_host] += 1
        r.p_rank, r.d_host, r.d_rank = p_rank, d_host, d_rank

    # -- event loop -------------------------------------------------------------------------------
    def run(self) -> None:
        rng, sc = self.rng, self.scale
        # background agents
        for w in range(2):  # two interactive sessions, one of them in Chinese
            s = self.new_session("opencode", T0 - 40, worker=w)
            self.push(T0 + rng.uniform(5, 60), "launch", s)
        for w in range(max(1, round(2 * sc))):
            s = self.new_session("reviewer", T0 - 40, worker=w)
            self.push(T0 + rng.uniform(0, 40), "launch", s)
        for w in range(max(1, round(1 * sc))):
            s = self.new_session("writer", T0 - 40, worker=w)
            self.push(T0 + rng.uniform(0, 30), "launch", s)
        # the writer agent's startup slam: fresh contexts at a high rate
        n_slam = max(8, round(0.8 * (SLAM[1] - SLAM[0]) * sc))
        for i in range(n_slam):
            t = T0 + SLAM[0] + (i + rng.random()) * (SLAM[1] - SLAM[0]) / n_slam
            self.push(t, "launch", self.new_session("writer", t))
        # the 80-session agent, killed seconds later
        to_d0 = [True] * SWARM_TO_DECODE0 + [False] * (SWARM_SESSIONS - SWARM_TO_DECODE0)
        rng.shuffle(to_d0)
        for i in range(SWARM_SESSIONS):
            t = T0 + SWARM_START + i * (3.0 / SWARM_SESSIONS) + rng.uniform(0, 0.03)
            s = self.new_session("swarm", t)
            s.route = (None, "decode-0" if to_d0[i] else "decode-1", None)
            self.push(t, "launch", s)
        self.push(T0 + SWARM_KILL, "kill", None)
        # requests in flight on decode-1 when it wedges: one long generation per rank that pauses
        # through the wedge, rooms whose metadata never reaches prefill, and rooms whose KV lands
        # while the scheduler is stuck
        for d in range(DP):
            t = T0 + W0 - 16.0 + 0.7 * d
            s = self.new_session("reviewer", t, forced="hold")
            s.route = (None, "decode-1", d)
            self.push(t, "launch", s)
        for i in range(STUCK_BOOT):
            t = T0 + W0 - 6.0 + 4.0 * i / STUCK_BOOT
            s = self.new_session("reviewer", t, forced="stuck_boot")
            s.route = (None, "decode-1", i % DP)
            self.push(t, "launch", s)
        for i in range(STUCK_KV):
            t = T0 + W0 - 4.4 + 0.6 * i
            s = self.new_session("reviewer", t, forced="stuck")
            s.route = (None, "decode-1", None)
            self.push(t, "launch", s)
        # new requests keep arriving at the wedged host: a batch client's one-shot writer jobs carry a
        # routing key that pins them to decode-1; they wait there and are served once it runs again
        for i in range(WEDGE_JOBS):
            t = T0 + W0 + 9.0 + WEDGE_JOB_S * i + rng.uniform(0, 3)
            s = self.new_session("writer", t, forced="pinned")
            s.route = (None, "decode-1", None)
            self.push(t, "launch", s)
        # the link fault window: forced requests on the faulty path, a victim and a metadata collision
        for dtt in (0.0, 0.8, 1.7, 2.5, 3.4):
            s = self.new_session("reviewer", T0 + F0 + dtt, forced="fail")
            s.route = FAULT_PATH
            self.push(T0 + F0 + dtt, "launch", s)
        s = self.new_session("reviewer", T0 + F0 + 6.0, forced="victim")
        s.route = (1, "decode-0", 1)
        self.push(T0 + F0 + 6.0, "launch", s)
        s = self.new_session("reviewer", T0 + F0 + 8.5, forced="ctxcorrupt")
        s.route = (3, "decode-0", 1)
        self.push(T0 + F0 + 8.5, "launch", s)
        # health checks (router GET /health -> 1-token generate)
        t = T0 + LOG_START + 70
        while t < T0 + ARR_END + 120:
            self.push(t + rng.uniform(0, 0.5), "health", None)
            t += 60.0
        self.startup_lines()
        while self.heap:
            t, _, kind, obj = heapq.heappop(self.heap)
            getattr(self, "ev_" + kind)(t, obj)

    def ev_launch(self, t: float, s: Session) -> None:
        if t >= T0 + ARR_END and not s.forced:
            return
        r = self.plan_turn(s, t)
        r.route = getattr(s, "route", None)
        self.ev_arrive(t, r)

    def ev_arrive(self, t: float, r: Req) -> None:
        self.route(r)
        rng = self.rng
        storm = SWARM_START <= t - T0 < SWARM_KILL + 3
        r.t_prealloc = t + (rng.uniform(0.05, 0.7) if storm else rng.uniform(0.004, 0.025))
        if r.d_host == "decode-1" and T0 + W0 <= t < T0 + W1:
            # the wedged scheduler reads its new requests only once it runs again
            r.t_prealloc = T0 + W1 + rng.uniform(0.4, 1.2)
        r.t_boot = r.t_prealloc + rng.uniform(0.002, 0.012)
        rank = self.ranks[r.p_rank]
        rank["booting"].append(r)
        if r.forced == "stuck_boot":
            self.stuck_boot(r)
            return
        self.push(r.t_boot, "boot", r)

    def stuck_boot(self, r: Req) -> None:
        """A room decode-1 pre-allocated just before its wedge whose metadata never reached prefill.

        Decode times it out in KVPoll.WaitingForInput when its loop runs again; the prefill sender,
        still in KVPoll.Bootstrapping, fails with the bootstrap timeout about BOOT_LAG later. No
        transfer unit is ever posted."""
        rng = self.rng
        r.d_out = "timeout"
        r.error_text = loglines.kv_transfer_error(r.room, loglines.waiting_timeout(r.room, WAIT_TIMEOUT))
        r.t_d_end = T0 + W1 + 0.02 + 0.013 * sum(1 for q in self.reqs if q.d_out == "timeout")
        r.t_dq_end = r.t_d_end
        r.p_out = "bootstrap_timeout"
        r.p_error = loglines.kv_transfer_error(r.room, loglines.bootstrap_timeout(r.room, WAIT_TIMEOUT))
        r.t_p_end = r.t_d_end + BOOT_LAG + rng.uniform(-0.25, 0.25)
        r.t_boot = r.t_p_end  # it leaves prefill's bootstrap queue only then
        self.after_reply(r, r.t_d_end + 0.004, ok=False)

    def ev_boot(self, t: float, r: Req) -> None:
        if r.t_pabort is not None:
            return
        rank = self.ranks[r.p_rank]
        rank["queue"].append(r)
        if not rank["busy"]:
            self.push(t, "rank", rank)

    def ev_health(self, t: float, _) -> None:
        r = Req(
            idx=-1,
            kind="health",
            sess=None,
            turn=0,
            t_arr=t,
            prompt=1,
            cached=0,
            completion=1,
            reasoning=0,
            final=True,
            stream=False,
            max_new=1,
            room=0,
            p_rid="HEALTH_CHECK_" + self.rid(),
            d_rid=None,
            forced=None,
            ksum=None,
            kv_ksum=False,
        )
        r.p_rank = self.rr[PREFILL] % DP
        self.rr[PREFILL] += 1
        r.t_boot = t + 0.0015
        self.health.append(r)
        self.push(r.t_boot, "boot", r)

    def ev_rank(self, t: float, rank: dict) -> None:
        if rank["busy"] or not rank["queue"]:
            return
        budget, items = MAX_PREFILL, []
        for r in rank["queue"]:
            take = min(r.new_tokens - r.done, CHUNK, budget)
            if take <= 0:
                break
            items.append((r, take))
            budget -= take
            if budget < PAGE:
                break
        cached = 0
        fwd = 0.012
        for r, take in items:
            if r.done == 0:
                cached += r.cached
                r.t_pf_start = t
                r.kv_held += r.cached
                rank["kv"] += r.cached
            r.kv_held += take
            rank["kv"] += take
            fwd += take / self.rate * (1 + (r.cached + r.done) / 150000)
        fwd *= self.rng.uniform(0.95, 1.05)
        in_batch = {id(r) for r, _ in items}
        waiting = [r for r in rank["queue"] if id(r) not in in_batch]
        rank["booting"] = [r for r in rank["booting"] if r.t_boot > t and r.t_pabort is None]
        rank["inflight"] = [r for r in rank["inflight"] if r.t_pf_fin is None or r.t_pf_fin > t]
        new_tok = sum(k for _, k in items)
        last = rank["last_line"]
        thr = new_tok / max(t - last, 0.05) if last is not None else new_tok / 1.0
        st = dict(
            t=t,
            rank=rank["idx"],
            new_seq=len(items),
            new_token=new_tok,
            cached_token=cached,
            token_usage=round(rank["kv"] / MAX_TOTAL_P, 2),
            running_req=sum(1 for r, k in items if r.done + k < r.new_tokens),
            queue_req=len(waiting),
            pending_token=sum(r.new_tokens - r.done for r in waiting),
            bootstrap_req=len(rank["booting"]),
            inflight_req=len(rank["inflight"]),
            input_throughput=round(thr, 2),
        )
        rank["last_line"] = t
        self.pstats.append(st)
        msg = loglines.prefill_batch(
            st["new_seq"],
            new_tok,
            cached,
            st["token_usage"],
            st["running_req"],
            st["queue_req"],
            st["pending_token"],
            st["bootstrap_req"],
            st["inflight_req"],
            thr,
        )
        self.line(PREFILL, t, "prefill_stats", "sg", msg, rank["idx"])
        rank["busy"] = True
        self.push(t + fwd, "bend", (rank, items))

    def ev_bend(self, t: float, payload) -> None:
        rank, items = payload
        rank["busy"] = False
        rng = self.rng
        for r, take in items:
            if r.t_pabort is not None:
                continue
            if r.kind == "health":
                rank["queue"].remove(r)
                rank["kv"] -= r.kv_held
                r.kv_held = 0
                r.t_pf_fin = t + rng.uniform(0.002, 0.006)
                continue
            c = sum(1 for u in r.units if u["kind"] == "kv")
            tokens = take + (r.cached if c == 0 else 0)
            r.done += take
            last = r.done >= r.new_tokens
            post = t + rng.uniform(0.0003, 0.0008)
            nbytes = tokens * KV_BYTES_PER_TOKEN
            r.units.append(
                dict(
                    kind="kv",
                    chunk=c,
                    is_last=last,
                    bytes=nbytes,
                    post=post,
                    done=post + nbytes / XFER_BW + rng.uniform(0.0004, 0.0012),
                    fail=False,
                )
            )
            if last:
                rank["queue"].remove(r)
                self.finish_prefill(r, rank, t)
        self.push(t, "rank", rank)

    def finish_prefill(self, r: Req, rank: dict, t: float) -> None:
        rng = self.rng
        r.t_pf_end = t
        lastkv = r.units[-1]
        for kind, nbytes in (("index_k", r.prompt * INDEXK_BYTES_PER_TOKEN), ("aux", AUX_BYTES)):
            post = lastkv["post"] + rng.uniform(0.00003, 0.00012)
            r.units.append(
                dict(
                    kind=kind,
                    chunk=None,
                    is_last=None,
                    bytes=nbytes,
                    post=post,
                    done=post + nbytes / XFER_BW + rng.uniform(0.0003, 0.0009),
                    fail=False,
                )
            )
        rel = lastkv["post"] - T0
        on_path = (r.p_rank, r.d_host, r.d_rank) == FAULT_PATH
        if r.forced == "fail" or (on_path and F0 <= rel < F0 + FAULT_LEN and r.forced is None):
            lastkv["fail"] = True
            r.fail_unit = lastkv
            r.t_fail = lastkv["post"] + rng.uniform(0.15, 0.35)
            self.fault_reqs.append(r)
            self.push(r.t_fail, "pfail", r)
            return
        r.t_xfer_done = max(u["done"] for u in r.units)
        r.t_pf_fin = r.t_xfer_done + rng.uniform(0.002, 0.03)
        rank["inflight"].append(r)
        self.push(r.t_xfer_done, "xfer", r)

    def release(self, r: Req) -> None:
        rank = self.ranks[r.p_rank]
        rank["kv"] -= r.kv_held
        r.kv_held = 0

    def ev_pfail(self, t: float, r: Req) -> None:
        self.release(r)
        r.p_out = "fail"
        r.t_p_end = t + 0.004
        r.d_out = "fail"
        r.error_text = loglines.kv_transfer_error(r.room, loglines.nixl_transfer_err(r.room))
        r.t_d_end = t + self.rng.uniform(0.006, 0.02)  # KV_STATUS tells decode the reason
        r.t_dq_end = r.t_d_end
        self.after_reply(r, r.t_d_end + 0.003, ok=False)

    def running(self, host: str, rank: int, t: float) -> int:
        n = 0
        for q in self.dreqs[(host, rank)]:
            for a, b in q.segs:
                if a <= t < b:
                    n += 1
                    break
        return n

    def ev_xfer(self, t: float, r: Req) -> None:
        rng = self.rng
        self.release(r)
        r.p_out = r.p_out or "ok"
        r.t_p_end = r.t_pf_fin
        if r.t_dabort is not None and r.t_dabort <= t:
            return  # decode already gave up on this room
        notif = max(u["done"] for u in r.units) + rng.uniform(0.0002, 0.0009)
        r.t_kv = notif + rng.uniform(0.003, 0.03)
        h = r.d_host
        if h == "decode-1" and T0 + W0 <= r.t_kv < T0 + W1:
            r.d_out = "timeout"
            r.error_text = loglines.kv_transfer_error(r.room, loglines.waiting_timeout(r.room, WAIT_TIMEOUT))
            r.t_d_end = T0 + W1 + 0.02 + 0.013 * sum(1 for q in self.reqs if q.d_out == "timeout")
            r.t_dq_end = r.t_d_end
            self.after_reply(r, r.t_d_end + 0.004, ok=False)
            return
        r.t_dq_end = r.t_kv
        if r.forced == "ctxcorrupt":
            r.d_out = "ctxcorrupt"
            r.error_text = "Metadata corruption detected - bootstrap_room mismatch"
            r.t_d_end = r.t_kv + 0.001
            self.ctx_req = r
            self.after_reply(r, r.t_d_end + 0.003, ok=False)
            return
        r.t_start = r.t_kv + rng.uniform(0.008, 0.04)
        # nothing decode-1 logs may fall inside the wedge (its lines trail the event by up to ~25 ms)
        if h == "decode-1" and T0 + W0 - 0.05 <= r.t_start < T0 + W1:
            r.t_start = T0 + W1 + rng.uniform(0.05, 0.3)
        n = self.running(h, r.d_rank, r.t_start) + 1
        r.speed = 1.0 / (0.0185 + 0.0014 * n) * rng.uniform(0.92, 1.08)
        r.t_fin = r.t_start + r.completion / r.speed
        if h == "decode-1" and r.t_start < T0 + W0 < r.t_fin + 0.05:
            r.t_fin = T0 + W1 + max(r.t_fin - (T0 + W0), 0.05)
            r.segs = [(r.t_start, T0 + W0 + 0.05), (T0 + W1, r.t_fin)]  # its last forward follows W0's line
        else:
            r.segs = [(r.t_start, r.t_fin)]
        self.dreqs[(h, r.d_rank)].append(r)
        r.d_out = "ok"
        r.t_d_end = r.t_fin
        self.push(r.t_fin, "dfin", r)

    def ev_dfin(self, t: float, r: Req) -> None:
        if r.d_out != "ok" or t != r.t_fin:
            return
        self.after_reply(r, t + self.rng.uniform(0.002, 0.006), ok=True)

    def ev_kill(self, t: float, _) -> None:
        rng = self.rng
        for r in self.reqs:
            if r.kind != "swarm":
                continue
            self.push(t + rng.uniform(0.05, 1.2), "pabort", r)
            self.push(t + rng.uniform(0.1, 2.2), "dabort", r)

    def ev_pabort(self, t: float, r: Req) -> None:
        if r.p_out is not None:
            r.late_p = t
            return
        r.t_pabort = t
        r.p_out = "aborted"
        r.t_p_end = t
        rank = self.ranks[r.p_rank]
        if r in rank["queue"]:
            rank["queue"].remove(r)
        self.release(r)

    def ev_dabort(self, t: float, r: Req) -> None:
        if r.d_out == "ok" and r.t_fin is not None and r.t_fin <= t:
            r.late_d = t
            return
        r.t_dabort = t
        if r.d_out == "ok":  # running
            r.d_out = "aborted_running"
            r.t_fin = t
            r.segs = [(a, min(b, t)) for a, b in r.segs if a < t]
        else:
            r.d_out = "aborted_transfer"
            r.t_dq_end = t
        r.t_d_end = t

    # -- fixed lines --------------------------------------------------------------------------------
    def startup_lines(self) -> None:
        rng = self.rng
        for h in HOSTS:
            role = "prefill" if h == PREFILL else "decode"
            t = T0 + LOG_START + (0 if h == PREFILL else rng.uniform(2, 6))
            self.line(
                h,
                t,
                "log",
                "pl",
                loglines.server_args(
                    model_path=MODEL_PATH,
                    served_model_name=MODEL,
                    tp_size=DP,
                    dp_size=DP,
                    ep_size=DP,
                    enable_dp_attention=True,
                    disaggregation_mode=role,
                    disaggregation_transfer_backend="nixl",
                    disaggregation_bootstrap_port=BOOTSTRAP_PORT,
                    chunked_prefill_size=CHUNK,
                    max_prefill_tokens=MAX_PREFILL,
                    kv_cache_dtype="fp8_e4m3",
                    log_requests=True,
                    log_requests_level=1,
                    decode_log_interval=DECODE_LOG_INTERVAL,
                    disable_overlap_schedule=False,
                    enable_metrics=True,
                ),
            )
            t += 14 + rng.uniform(0, 3)
            for d in range(DP):
                td = t + d * 0.011 + rng.uniform(0, 0.004)
                pid = SCHED_PID0[h] + d
                mt = MAX_TOTAL_P if h == PREFILL else MAX_TOTAL_D
                self.line(
                    h,
                    td,
                    "log",
                    "sg",
                    loglines.memory_pool(
                        mt, CHUNK, MAX_PREFILL, 64 if h == PREFILL else 256, 163840, rng.uniform(16.5, 19.5)
                    ),
                    d,
                )
                tn = td + 1.7 + rng.uniform(0, 0.2)
                if h == PREFILL:
                    self.line(
                        h, tn, "nixl", "absl", ("I", pid, "nixl_agent.cpp", 131, "NIXL version: 1.3.0 (git: 5d2e1f0)")
                    )
                    for k, (key, val) in enumerate(
                        (("ADDRESS_VERSION", "v2"), ("RNDV_THRESH", "inf"), ("MAX_RMA_RAILS", "2"))
                    ):
                        self.line(
                            h,
                            tn + 0.0004 * (k + 1),
                            "nixl",
                            "absl",
                            ("I", pid, "config.cpp", 43, f"Modified UCX config: {key}={val}"),
                        )
                    self.line(
                        h,
                        tn + 0.0021,
                        "ucx",
                        "ucx",
                        (
                            pid,
                            0,
                            "ucp_context.c",
                            2339,
                            "INFO",
                            "Version 1.19.0 (loaded from /opt/ucx/lib/libucp.so.0)",
                        ),
                    )
                self.line(h, tn + 0.004, "nixl_py", "npy", ("INFO", "_api.py", 212, loglines.nixl_backend("UCX")))
                self.line(
                    h, tn + 0.009, "nixl_py", "npy", ("INFO", "_api.py", 234, loglines.nixl_agent(self.agents[h][d]))
                )
                self.line(h, tn + 0.012, "log", "sg", "NIXL KVManager initialized with backend: UCX", d)
            t += 6
            if h == PREFILL:
                self.line(
                    h, t, "log", "pl", f"CommonKVBootstrapServer started successfully on 0.0.0.0:{BOOTSTRAP_PORT}"
                )
            for msg in loglines.uvicorn_startup(MAIN_PID[h]):
                t += 0.002
                self.line(h, t, "uvicorn", "uv", ("INFO", msg))
            t += 0.6
            self.line(
                h,
                t,
                "http_access",
                "pl",
                loglines.access("127.0.0.1", rng.randint(40000, 60000), "GET", "/get_model_info", 200),
            )
            self.line(h, t + 0.01, "log", "pl", "Start of pd disaggregation warmup ...")
            self.line(h, t + 2.3, "log", "pl", f"Disaggregation warmup requests completed for all {DP} DP ranks")
            self.line(h, t + 2.31, "log", "pl", "End of disaggregation warmup")
            self.line(h, t + 2.32, "log", "pl", loglines.READY)

    # -- after the simulation: request lines, decode stats, corruption ----------------------------------
    def gri(self, rid: str, room: int, r: Req, health: bool = False) -> str:
        if health:
            sp = "{'max_new_tokens': 1, 'temperature': 0.0}"
            bh, bp = FAKE_BOOTSTRAP_HOST, "None"
        else:
            sp = f"{{'max_new_tokens': {r.max_new}, 'temperature': 0.6, 'top_p': 0.95}}"
            bh, bp = HOST_IP[PREFILL], BOOTSTRAP_PORT
        return loglines.req_input(rid, sp, r.stream, bh, bp, room)

    def access(self, host: str, t: float, method: str, path: str, status: int, ip: str = ROUTER_IP) -> None:
        self.line(
            host, t, "http_access", "pl", loglines.access(ip, self.rng.randint(32768, 60999), method, path, status)
        )

    def kubelet_probes(self) -> None:
        """decode-1's k8s probes of /health, and what its HTTP side logs for them while the scheduler is stuck.

        Before the wedge every probe is answered 200. Once no detokenizer output has arrived for
        SGLANG_HEALTH_CHECK_TIMEOUT, the generate-based check fails: it logs `Health check failed …`
        (every HEALTH_FAIL_S while the wedge lasts) and marks the server UnHealthy, and the probes
        in between are answered 503 at once. The first output after the wedge (the timeouts' aborts)
        makes the server healthy again."""
        rng = self.rng
        h, off = "decode-1", CLOCK_OFFSET["decode-1"]
        lo, hi = T0 + W0, T0 + W1
        fails = []
        t = lo + HEALTH_CHECK_TIMEOUT + rng.uniform(0.3, 1.0)
        while t < hi:
            fails.append(t)
            t += HEALTH_FAIL_S
        self.health_fails = fails
        for t in fails:
            hms = lambda x: _pfx_time(x + off)[11:]  # noqa: E731
            self.line(
                h,
                t,
                "health_check_failed",
                "pl",
                loglines.health_check_failed(HEALTH_CHECK_TIMEOUT, hms(t - HEALTH_CHECK_TIMEOUT), hms(lo)),
            )
            self.access(h, t + 0.0006, "GET", "/health", 503, KUBELET_IP)
        n503 = len(fails)
        t = T0 + LOG_START + 45 + rng.uniform(0, 1)
        while t < T0 + ARR_END + 120:
            if lo <= t < fails[0]:
                pass  # waiting on the check that will fail; answered with it
            elif fails[0] <= t < hi:
                self.access(h, t + rng.uniform(0.001, 0.004), "GET", "/health", 503, KUBELET_IP)
                n503 += 1
            else:
                self.access(h, t + rng.uniform(0.004, 0.03), "GET", "/health", 200, KUBELET_IP)
            t += PROBE_S + rng.uniform(-0.05, 0.05)
        self.health_503 = n503

    def request_lines(self) -> None:
        rng = self.rng
        for r in self.health:
            self.line(
                PREFILL, r.t_arr + 0.0008, "request_received", "pl", loglines.receive(self.gri(r.p_rid, 0, r, True))
            )
            self.line(
                PREFILL,
                r.t_pf_fin,
                "request_finished",
                "pl",
                loglines.finish(
                    self.gri(r.p_rid, 0, r, True),
                    loglines.meta_info(r.p_rid, loglines.finish_length(1), 1, 0, 1, 0, r.t_pf_fin - r.t_arr),
                ),
            )
            self.access(PREFILL, r.t_pf_fin + 0.0004, "GET", "/health", 200)
        for h in DECODES:
            t = T0 + LOG_START + 70 + (21 if h == "decode-0" else 37)
            while t < T0 + ARR_END + 120:
                th = t + rng.uniform(0, 0.5)
                t += 60.0
                if h == "decode-1" and T0 + W0 - 1 <= th < T0 + W1 + 1:
                    continue  # the router's probes time out; nothing reaches the wedged server
                hr = Req(
                    idx=-1,
                    kind="health",
                    sess=None,
                    turn=0,
                    t_arr=th,
                    prompt=1,
                    cached=0,
                    completion=1,
                    reasoning=0,
                    final=True,
                    stream=False,
                    max_new=1,
                    room=0,
                    p_rid=None,
                    d_rid=None,
                    forced=None,
                    ksum=None,
                    kv_ksum=False,
                )
                rid = "HEALTH_CHECK_" + self.rid()
                fin = th + rng.uniform(0.04, 0.09)
                self.line(h, th + 0.0008, "request_received", "pl", loglines.receive(self.gri(rid, 0, hr, True)))
                self.line(
                    h,
                    fin,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        self.gri(rid, 0, hr, True),
                        loglines.meta_info(rid, loglines.finish_length(1), 1, 0, 1, 0, fin - th),
                    ),
                )
                self.access(h, fin + 0.0004, "GET", "/health", 200)
                self.health_count[h] = self.health_count.get(h, 0) + 1
        warned = warned_boot = False
        for r in self.reqs:
            P, D = PREFILL, r.d_host
            tp, td = r.t_arr + rng.uniform(0.0008, 0.0016), r.t_arr + rng.uniform(0.0012, 0.0022)
            self.line(P, tp, "request_received", "pl", loglines.receive(self.gri(r.p_rid, r.room, r)))
            self.line(D, td, "request_received", "pl", loglines.receive(self.gri(r.d_rid, r.room, r)))
            pobj, dobj = self.gri(r.p_rid, r.room, r), self.gri(r.d_rid, r.room, r)
            room = r.room
            # prefill side
            if r.p_out in ("ok",):
                self.line(
                    P,
                    r.t_pf_fin,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        pobj,
                        loglines.meta_info(
                            r.p_rid, loglines.finish_length(0), r.prompt, 0, 1, r.cached, r.t_pf_fin - tp
                        ),
                    ),
                )
                self.access(P, r.t_pf_fin + 0.0004, "POST", "/generate", 200)
                if getattr(r, "late_p", None):
                    self.line(
                        P,
                        r.late_p,
                        "abort",
                        "pl",
                        f"Abort request for rid={r.p_rid} not found in rid_to_state; likely already finished/removed.",
                    )
            elif r.p_out == "aborted":
                self.line(
                    P,
                    r.t_p_end + 0.0005,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        pobj,
                        loglines.meta_info(
                            r.p_rid,
                            loglines.finish_abort(loglines.ABORTED, "None"),
                            r.prompt,
                            0,
                            0,
                            r.cached if r.t_pf_start else 0,
                            r.t_p_end - tp,
                        ),
                    ),
                )
            elif r.p_out == "bootstrap_timeout":
                if not warned_boot:
                    warned_boot = True
                    self.line(
                        P,
                        r.t_p_end - 0.0005,
                        "log",
                        "sg",
                        "Some requests timed out when bootstrapping, which means prefill instances fail to receive "
                        "the KV indices from the decode instance of this request. If a greater mean TTFT is "
                        "acceptable, you can 'export SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=600' (10 minutes) to "
                        "relax the timeout condition. ",
                        r.p_rank,
                    )
                self.line(
                    P,
                    r.t_p_end,
                    "bootstrap_failed",
                    "sg",
                    loglines.bootstrap_failed(r.p_rank, r.p_rid, room, r.p_error),
                    r.p_rank,
                )
                self.line(
                    P,
                    r.t_p_end + 0.0006,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        pobj,
                        loglines.meta_info(
                            r.p_rid, loglines.finish_abort(r.p_error, 500), r.prompt, 0, 0, 0, r.t_p_end - tp
                        ),
                    ),
                )
                self.access(P, r.t_p_end + 0.0009, "POST", "/generate", 500)
            elif r.p_out == "fail":
                reason = loglines.kv_transfer_error(room, loglines.nixl_transfer_err(room))
                tf = r.t_fail
                self.line(
                    P,
                    tf - 0.00004,
                    "ucx",
                    "ucx",
                    (
                        SCHED_PID0[P] + r.p_rank,
                        2,
                        "ib_mlx5.c",
                        350,
                        "ERROR",
                        "mlx5_3: completion with error (transport retry counter exceeded)",
                    ),
                )
                self.line(
                    P,
                    tf + 0.00002,
                    "nixl",
                    "absl",
                    (
                        "W",
                        SCHED_PID0[P] + r.p_rank + 56,
                        "ucx_utils.cpp",
                        65,
                        "Unexpected UCX error: Input/output error",
                    ),
                )
                self.line(
                    P,
                    tf + 0.00006,
                    "nixl",
                    "absl",
                    (
                        "E",
                        SCHED_PID0[P] + r.p_rank + 56,
                        "nixl_agent.cpp",
                        1149,
                        "getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
                    ),
                )
                if r is min(self.fault_reqs, key=lambda q: q.t_fail):
                    self.line(P, tf + 0.002, "exception", "sg", loglines.worker_error(room), r.p_rank)
                    for i, tb in enumerate(
                        (
                            loglines.TRACEBACK,
                            loglines.frame(loglines.CONN_PY, 1153, "transfer_worker"),
                            "    states = self._settle_batch(batch, handles)",
                            loglines.frame(loglines.CONN_PY, 1288, "_settle_batch"),
                            "    state = self.agent.check_xfer_state(handle)",
                            loglines.frame(
                                "/usr/local/lib/python3.12/dist-packages/nixl_cu12/_api.py", 612, "check_xfer_state"
                            ),
                            "    status = self.agent.getXferStatus(handle)",
                            "nixl_cu12._bindings.nixlBackendError: NIXL_ERR_BACKEND",
                        )
                    ):
                        self.line(P, tf + 0.002, "traceback", "raw", tb)
                self.line(
                    P,
                    r.t_p_end,
                    "transfer_failed",
                    "sg",
                    loglines.transfer_failed("prefill", r.p_rank, r.p_rid, room, reason),
                    r.p_rank,
                )
                self.line(
                    P,
                    r.t_p_end + 0.0006,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        pobj,
                        loglines.meta_info(
                            r.p_rid, loglines.finish_abort(reason, 500), r.prompt, 0, 0, r.cached, r.t_p_end - tp
                        ),
                    ),
                )
                self.access(P, r.t_p_end + 0.0009, "POST", "/generate", 500)
            # decode side
            o = r.d_out
            if o == "ok":
                # uvicorn logs a streamed response when its headers go out, right after the request is read
                self.access(
                    D, (td + rng.uniform(0.002, 0.008)) if r.stream else (r.t_fin + 0.0006), "POST", "/generate", 200
                )
                self.line(
                    D,
                    r.t_fin + 0.0003,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        dobj,
                        loglines.meta_info(
                            r.d_rid, loglines.FINISH_STOP, r.prompt, r.reasoning, r.completion, r.cached, r.t_fin - td
                        ),
                    ),
                )
                if getattr(r, "late_d", None):
                    self.line(
                        D,
                        r.late_d,
                        "abort",
                        "pl",
                        f"Abort request for rid={r.d_rid} not found in rid_to_state; likely already finished/removed.",
                    )
            elif o in ("aborted_transfer", "aborted_running"):
                if o == "aborted_transfer":
                    self.line(
                        D,
                        r.t_d_end,
                        "transfer_failed",
                        "sg",
                        loglines.transfer_failed(
                            "decode", r.d_rank, r.d_rid, room, loglines.kv_transfer_error(room, loglines.ABORTED)
                        ),
                        r.d_rank,
                    )
                gen = 0 if o == "aborted_transfer" else max(1, int(sum(b - a for a, b in r.segs) * r.speed))
                self.line(
                    D,
                    r.t_d_end + 0.0004,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        dobj,
                        loglines.meta_info(
                            r.d_rid,
                            loglines.finish_abort(loglines.ABORTED, "None"),
                            r.prompt,
                            min(gen, r.reasoning),
                            gen,
                            r.cached,
                            r.t_d_end - td,
                        ),
                    ),
                )
            elif o in ("fail", "timeout"):
                reason = r.error_text
                if o == "timeout":
                    if not warned:
                        warned = True
                        self.line(
                            D,
                            r.t_d_end - 0.0005,
                            "log",
                            "sg",
                            "Some requests fail to receive KV Cache transfer done signal after bootstrapping. If a "
                            "greater mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' "
                            "(10 minutes) to relax the timeout condition. ",
                            r.d_rank,
                        )
                self.line(
                    D,
                    r.t_d_end,
                    "transfer_failed",
                    "sg",
                    loglines.transfer_failed("decode", r.d_rank, r.d_rid, room, reason),
                    r.d_rank,
                )
                self.line(
                    D,
                    r.t_d_end + 0.0004,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        dobj,
                        loglines.meta_info(
                            r.d_rid, loglines.finish_abort(reason, 500), r.prompt, 0, 0, r.cached, r.t_d_end - td
                        ),
                    ),
                )
                self.access(D, r.t_d_end + 0.0007, "POST", "/generate", 500)
            elif o == "ctxcorrupt":
                src = self.fault_reqs[-1].room
                r.metadata_room = src
                self.line(
                    D,
                    r.t_kv,
                    "corruption_detected",
                    "sg",
                    f"Context corruption detected: Request {r.d_rid} (bootstrap_room={room}) received metadata from "
                    f"bootstrap_room={src}. Metadata buffer index: 17. This indicates metadata buffer index collision.",
                    r.d_rank,
                )
                self.line(
                    D,
                    r.t_d_end + 0.0004,
                    "request_finished",
                    "pl",
                    loglines.finish(
                        dobj,
                        loglines.meta_info(
                            r.d_rid, loglines.finish_abort(r.error_text, 500), r.prompt, 0, 0, r.cached, r.t_d_end - td
                        ),
                    ),
                )
                self.access(D, r.t_d_end + 0.0007, "POST", "/generate", 500)
            if r.ksum_mismatch:
                self.line(
                    D,
                    r.t_ksum_d + 0.0006,
                    "checksum_mismatch",
                    "sg",
                    f"KV checksum mismatch req={r.d_rid} bootstrap_room={room} expected=0x{r.ksum} got=0x{r.ksum_d}",
                    r.d_rank,
                )

    def decode_stats(self) -> None:
        rng = self.rng
        for h in DECODES:
            for d in range(DP):
                mine = [r for r in self.reqs if r.d_host == h and r.d_rank == d]
                starts = sorted(a for r in mine for a, _ in r.segs)
                if not starts:
                    continue
                t = starts[0] + rng.uniform(0.5, 2.0)
                last = t - 3.0
                end = max(b for r in mine for _, b in r.segs)
                # decode-1's ranks print their last line just before the wedge, the first after it
                # once the timeouts have been swept
                wedge_line = T0 + W0 - LAST_LINE[d] if h == "decode-1" else None
                while t < end:
                    resume = False
                    if wedge_line is not None and t >= wedge_line - 1.0:
                        t, wedge_line, resume = (
                            (T0 + W0 - LAST_LINE[d], None, True) if t < T0 + W1 else (t, None, False)
                        )
                    act = [r for r in mine if any(a <= t < b for a, b in r.segs)]
                    if not act:
                        nxt = [a for a in starts if a > t]
                        if not nxt:
                            break
                        t = nxt[0] + rng.uniform(0.5, 2.0)
                        continue
                    n = len(act)
                    gen, tok = 0.0, 0
                    for r in mine:
                        done_now = 0.0
                        for a, b in r.segs:
                            gen += max(0.0, min(b, t) - max(a, last)) * r.speed
                            done_now += max(0.0, min(b, t) - a)
                        if r in act:
                            tok += r.prompt + int(done_now * r.speed)
                    pre = [r for r in mine if r.t_prealloc is not None and r.t_prealloc <= t < (r.t_dq_end or 1e18)]
                    st = dict(
                        running_req=n,
                        token=tok,
                        token_usage=round(tok / MAX_TOTAL_D, 2),
                        prealloc_usage=round(sum(r.prompt for r in pre) / MAX_TOTAL_D, 2),
                        prealloc_req=sum(1 for r in mine if r.t_arr <= t < r.t_prealloc and (r.t_dq_end or 1e18) > t),
                        transfer_req=len(pre),
                        queue_req=sum(
                            1 for r in mine if r.t_kv is not None and r.t_start is not None and r.t_kv <= t < r.t_start
                        ),
                        gen_throughput=round(gen / max(t - last, 1e-3), 2),
                    )
                    msg = loglines.decode_batch(
                        n,
                        tok,
                        st["token_usage"],
                        st["prealloc_usage"],
                        st["prealloc_req"],
                        st["transfer_req"],
                        st["gen_throughput"],
                        st["queue_req"],
                    )
                    self.line(h, t, "decode_stats", "sg", msg, d)
                    if resume:
                        self.wedge_last[d] = dict(t=t, **st)
                    last = t
                    t += DECODE_LOG_INTERVAL * (0.0185 + 0.0014 * n) * rng.uniform(0.97, 1.03)
                    if resume:
                        t = T0 + W1 + rng.uniform(0.5, 1.5)

    def windows(self) -> None:
        """Derived windows: slam backlog, elevated corruption windows."""
        lo, hi = T0 + SLAM[0], T0 + SLAM[1]
        latest: dict = {}
        self.backlog_cleared = hi
        for st in self.pstats:  # first stats line after the slam at which every rank's queue is empty
            latest[st["rank"]] = st["queue_req"]
            if st["t"] >= hi and len(latest) == DP and not any(latest.values()):
                self.backlog_cleared = st["t"]
                break
        fails = [r.t_fail for r in self.fault_reqs]
        self.elevated = [
            dict(reason="prefill_slam", host="*", start=lo, end=max(hi, self.backlog_cleared)),
            dict(
                reason="after_abort_storm",
                host="decode-0",
                start=T0 + SWARM_KILL,
                end=T0 + SWARM_KILL + 2.2 + ELEVATED_AFTER,
            ),
            dict(reason="after_abort_storm", host="decode-1", start=T0 + SWARM_KILL, end=T0 + W0),
            # the wedge's mass timeout frees the pages of rooms whose KV had landed: the same late-write
            # exposure as any failed transfer on that host
            dict(reason="after_wedge_timeouts", host="decode-1", start=T0 + W1, end=T0 + W1 + ELEVATED_AFTER),
            dict(
                reason="after_transfer_failures", host=FAULT_PATH[1], start=min(fails), end=max(fails) + ELEVATED_AFTER
            ),
        ]

    def in_elevated(self, r: Req) -> bool:
        t = r.t_kv
        return any(w["host"] in ("*", r.d_host) and w["start"] <= t <= w["end"] for w in self.elevated)

    def corruption(self) -> None:
        ok = [r for r in self.reqs if r.d_out == "ok" and r.sess is not None and r.sess.source]
        # checksum-mismatch rooms: one in the slam on decode-0, the forced victim, one late on decode-1
        slam = [
            r for r in ok if r.d_host == "decode-0" and T0 + SLAM[0] <= r.t_arr < T0 + SLAM[1] and r.kind == "writer"
        ]
        late = [r for r in ok if r.d_host == "decode-1" and r.t_arr > T0 + W1 + 120 and not r.forced]
        victim = [r for r in ok if r.forced == "victim"]
        picks = []
        for group in (slam, victim, late):
            cands = [r for r in group if r not in picks] or [r for r in ok if r not in picks]
            picks.append(cands[len(cands) // 2])
        for r in picks:
            r.ksum_mismatch = True
            r.ksum_d = _hex(self.crng, 16)
            r.corrupt = ("incoherent", INCOHERENT[len(self.ksum_rooms) % 3])
            self.ksum_rooms.append(r)
        # after failures on a host only a handful of replies follow, so a coin per reply could leave
        # the window no worse than the rest: the rate there is planted as a count
        counted = set()
        for w in self.elevated:
            if not w["reason"].startswith("after_") or w["reason"] == "after_abort_storm":
                continue
            members = [r for r in ok if r.d_host == w["host"] and w["start"] <= r.t_kv <= w["end"]]
            counted |= {id(r) for r in members}
            free = [r for r in members if not r.corrupt]
            need = max(0, round(P_AFTER_FAIL * len(members)) - (len(members) - len(free)))
            for r in self.crng.sample(free, min(need, len(free))):
                inc = self.crng.random() < 0.6
                r.corrupt = (
                    ("incoherent", self.crng.choice(INCOHERENT))
                    if inc
                    else ("parse_leak", self.crng.choice(PARSE_LEAK))
                )
        for r in ok:
            if r.corrupt or id(r) in counted:
                continue
            high = self.in_elevated(r)
            x = self.crng.random()
            if x < (P_HIGH if high else P_BASE):
                inc = self.crng.random() < (0.6 if high else 0.3)
                r.corrupt = (
                    ("incoherent", self.crng.choice(INCOHERENT))
                    if inc
                    else ("parse_leak", self.crng.choice(PARSE_LEAK))
                )
        # hard negatives: clean final turns, spread over the run
        finals = [r for r in ok if r.final and not r.corrupt and r.kind in ("reviewer", "opencode", "writer")]
        zh = [r for r in finals if r.sess.lang == "zh"]
        others = [r for r in finals if r.sess.lang != "zh"]
        for r in zh[:3]:
            r.hard_negative = "chinese"
        kinds = ["fenced_markup", "repeated_table_rows"]
        step = max(1, len(others) // 7)
        for i, r in enumerate(others[step // 2 :: step][:6]):
            r.hard_negative = kinds[i % 2]
        # the engineer's interactive session quotes the incident's own log lines back to the user:
        # after the link fault its traceback, else after the wedge an excerpt of it, else the storm
        oc = [r for r in finals if r.kind == "opencode" and r.sess.lang == "en" and not r.hard_negative]
        quoted = (
            [r for r in oc if r.t_arr > T0 + F0 + FAULT_LEN]
            or [r for r in oc if r.t_arr > T0 + W1 + 5]
            or [r for r in oc if r.t_arr > T0 + SWARM_KILL + 5]
        )
        if quoted:
            quoted[0].hard_negative = "quoted_log"

    # -- rendering ----------------------------------------------------------------------------------
    def render_log(self, host: str, recs: list) -> tuple[bytes, dict]:
        off = CLOCK_OFFSET[host]
        rng = random.Random(self.seed * 31 + HOSTS.index(host))
        out, kinds = [], {}
        cri = 0.0
        for t, _, kind, style, rank, msg in recs:
            th = t + off
            pt = _pfx_time(th)
            if style == "sg":
                s = loglines.sglang(pt, loglines.dp_tags(rank), msg)
            elif style == "pl":
                s = loglines.sglang(pt, "", msg)
            elif style == "uv":
                s = loglines.sglang(pt, "", loglines.uvicorn(*msg))
            elif style == "absl":
                sev, tid, f, ln, m = msg
                d, us = _split(th)
                s = loglines.glog(sev, f"{d:%m%d}", f"{d:%H:%M:%S}", us, tid, f, ln, m)
            elif style == "ucx":
                pid, thr, f, ln, lvl, m = msg
                d, us = _split(th)
                s = loglines.ucx(int(d.timestamp()), us, host, pid, thr, f, ln, lvl, m)
            elif style == "npy":
                s = loglines.nixl_py(pt, *msg)
            else:
                s = msg
            if host == "decode-1":  # containerd stamps each line a little later, in order
                cri = max(cri + 0.000002, th + rng.uniform(0.00008, 0.0009))
                d, us = _split(cri)
                s = loglines.cri(f"{d:%Y-%m-%dT%H:%M:%S}.{us:06d}{rng.randint(0, 999):03d}", "stdout", s)
            out.append(s)
            kinds[kind] = kinds.get(kind, 0) + 1
        return ("\n".join(out) + "\n").encode(), kinds

    def trace_events(self) -> dict:
        """(host, rank) -> list of (t_true, seq, dict) in emission order."""
        ev: dict = {(h, d): [] for h in HOSTS for d in range(DP)}
        n = [0]

        def add(h, d, t, **f):
            n[0] += 1
            ev[(h, d)].append((t, n[0], f))

        rng = random.Random(self.seed * 131 + 7)
        for r in self.reqs:
            if (
                not r.units
                and r.t_pabort is None
                and r.d_out not in ("aborted_transfer",)
                and r.p_out != "bootstrap_timeout"
            ):
                continue
            P, D = (PREFILL, r.p_rank), (r.d_host, r.d_rank)
            ppeer, dpeer = self.agents[r.d_host][r.d_rank], self.agents[PREFILL][r.p_rank]
            first_p = first_d = True
            # the decode scheduler consumes notifications until it gives up on the room, never while wedged
            consumed_until = (
                r.t_d_end if r.d_out in ("fail", "timeout", "aborted_transfer", "aborted_running") else 1e18
            )
            kv_ck = {}
            for u in r.units:
                base = dict(kind=u["kind"])
                if u["kind"] == "kv":
                    base.update(chunk=u["chunk"], is_last=u["is_last"])
                if u["kind"] == "index_k" or (u["kind"] == "kv" and r.kv_ksum):
                    ck = r.ksum if u["kind"] == "index_k" else _hex(rng, 16)
                    kv_ck[(u["kind"], u["chunk"])] = ck
                    add(
                        *P,
                        u["post"] - rng.uniform(0.0002, 0.0006),
                        room=r.room,
                        rid=r.p_rid,
                        **base,
                        event="checksum",
                        bytes=u["bytes"],
                        checksum=ck,
                        checksum_algo="xxh64",
                    )
                    first_p = False
                f = dict(room=r.room, **({"rid": r.p_rid} if first_p else {}), **base)
                first_p = False
                add(*P, u["post"], **f, event="post", bytes=u["bytes"], peer=ppeer)
                if u["fail"]:
                    add(
                        *P,
                        r.t_fail,
                        room=r.room,
                        **base,
                        event="fail",
                        status="NIXL_ERR_BACKEND",
                        peer=ppeer,
                        error="getXferStatus: backend 'UCX' returned error status NIXL_ERR_BACKEND",
                    )
                    continue
                add(*P, u["done"], room=r.room, **base, event="done", status="NIXL_SUCCESS")
                tn = u["done"] + rng.uniform(0.0002, 0.0009)
                if tn >= consumed_until or (r.d_host == "decode-1" and T0 + W0 <= tn < T0 + W1 + 0.5):
                    continue
                f = dict(room=r.room, **({"rid": r.d_rid} if first_d else {}), **base)
                first_d = False
                add(*D, tn, **f, event="notif", peer=dpeer)
                tc = tn + rng.uniform(0.004, 0.02)
                if (u["kind"], u["chunk"]) in kv_ck and not (r.d_host == "decode-1" and T0 + W0 <= tc < T0 + W1 + 0.5):
                    ck = kv_ck[(u["kind"], u["chunk"])]
                    if u["kind"] == "index_k" and r.ksum_mismatch:
                        ck = r.ksum_d
                        r.t_ksum_d = tc
                    add(
                        *D,
                        tc,
                        room=r.room,
                        **base,
                        event="checksum",
                        bytes=u["bytes"],
                        checksum=ck,
                        checksum_algo="xxh64",
                    )
            if r.p_out == "aborted":
                add(
                    *P,
                    r.t_p_end,
                    room=r.room,
                    kind="kv",
                    event="abort",
                    error=loglines.kv_transfer_error(r.room, loglines.ABORTED),
                )
            elif r.p_out == "bootstrap_timeout":
                add(*P, r.t_p_end, room=r.room, rid=r.p_rid, kind="kv", event="abort", error=r.p_error)
            elif r.p_out == "fail":
                add(
                    *P,
                    r.t_p_end,
                    room=r.room,
                    kind="kv",
                    event="abort",
                    error=loglines.kv_transfer_error(r.room, loglines.nixl_transfer_err(r.room)),
                )
            if r.d_out in ("aborted_transfer", "aborted_running"):
                add(
                    *D,
                    r.t_d_end,
                    room=r.room,
                    **({"rid": r.d_rid} if first_d else {}),
                    kind="kv",
                    event="abort",
                    error=loglines.kv_transfer_error(r.room, loglines.ABORTED),
                )
            elif r.d_out in ("fail", "timeout"):
                add(
                    *D,
                    r.t_d_end,
                    room=r.room,
                    **({"rid": r.d_rid} if first_d else {}),
                    kind="kv",
                    event="abort",
                    error=r.error_text,
                )
            elif r.d_out == "ctxcorrupt":
                add(*D, r.t_d_end, room=r.room, kind="aux", event="abort", error=r.error_text)
        return ev

    def render_trace(self, host: str, d: int, events: list) -> tuple[str, bytes, dict]:
        pid = SCHED_PID0[host] + d
        off = CLOCK_OFFSET[host]
        start = T0 + LOG_START + 25 + off
        name = f"kvtrace-{host}-{pid}-{dt.datetime.fromtimestamp(int(start), UTC):%Y%m%dT%H%M%SZ}.jsonl"
        out, counts = [], {}
        side = "prefill" if host == PREFILL else "decode"
        for t, _, f in sorted(events, key=lambda e: (e[0], e[1])):
            th = t + off
            rec = {
                "ts": iso(th) if host == "decode-1" else round(th, 6),
                "host": host,
                "pid": pid,
                "side": side,
                "engine_rank": d,
            }
            if host == PREFILL:
                rec["dp_rank"] = d
            room = f.pop("room")
            rec["room"] = str(room) if host == "decode-1" else room
            rec.update(f)
            out.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
            counts[f["event"]] = counts.get(f["event"], 0) + 1
        return name, ("\n".join(out) + "\n").encode() if out else b"", counts


# -- transcripts -----------------------------------------------------------------------------------


def _tool_call(rng: random.Random, agent: str) -> tuple[str, dict]:
    if agent == "writer":
        name = rng.choice(["read", "bash", "write"])
    else:
        name = rng.choice(["read", "read", "grep", "bash", "edit"])
    if name == "read":
        args = {"filePath": rng.choice(FILES), "offset": rng.randint(1, 2000), "limit": 120}
    elif name == "grep":
        args = {"pattern": rng.choice(GREPS), "path": SRC}
    elif name == "bash":
        args = {"command": rng.choice(BASH)}
    elif name == "write":
        args = {
            "filePath": f"articles/seg_0/chunk_{rng.randint(0, 9)}/msg_0_0_{rng.randint(1, 40)}.md",
            "content": rng.choice(ARTICLE),
        }
    else:
        f = rng.choice(FILES)
        args = {
            "filePath": f,
            "oldString": "self.index_k_host = torch.empty((size, 132)",
            "newString": "self.index_k_host = torch.empty((size, self.index_k_row_bytes)",
        }
    return name, args


def _reply(g: _Gen, r: Req) -> dict:
    """The assistant turn as the client saw it: content, reasoning, tool_calls, finish_reason."""
    rng = g.trng
    s = r.sess
    reasoning = rng.choice(REASONING)
    calls: list = []
    if r.corrupt:
        cls, sub = r.corrupt
        if cls == "parse_leak":
            content, reasoning = _leak_text(rng, sub)
        else:
            content = _incoherent_text(rng, sub)
        return dict(content=content, reasoning=reasoning, calls=[], finish="stop")
    if r.hard_negative == "chinese":
        return dict(content=rng.choice(ZH_REPLIES), reasoning="用户用中文提问，用中文回答。", calls=[], finish="stop")
    if r.hard_negative == "fenced_markup":
        return dict(content=_fenced_markup(), reasoning=reasoning, calls=[], finish="stop")
    if r.hard_negative == "repeated_table_rows":
        return dict(content=_table_reply(rng), reasoning=reasoning, calls=[], finish="stop")
    if r.hard_negative == "quoted_log":
        content, r.quoted = _quoted_log_reply(g, r)
        return dict(
            content=content,
            reasoning="The user wants the evidence from the logs, quoted exactly.",
            calls=[],
            finish="stop",
        )
    if r.final:
        if s.agent == "writer":
            content = "\n\n".join(rng.sample(ARTICLE, 2))
        elif s.lang == "zh":
            content = rng.choice(ZH_REPLIES)
        else:
            content = rng.choice(FINAL_EN)
        return dict(content=content, reasoning=reasoning, calls=[], finish="stop")
    k = 2 if rng.random() < 0.2 else 1
    for _ in range(k):
        name, args = _tool_call(rng, s.agent)
        calls.append((f"call_{_hex(rng, 24)}", name, args))
    return dict(content=rng.choice(SHORT_CONTENT), reasoning=reasoning, calls=calls, finish="tool_calls")


AGENT_TOOLS = {"writer": ("read", "bash", "write"), "reviewer": ("read", "grep", "bash", "edit")}


def _tools_body(agent: str) -> list:
    out = []
    for name in AGENT_TOOLS[agent]:
        _desc, props, req = TOOLS[name]
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "parameters": {
                        "type": "object",
                        "properties": {k: {"type": v} for k, v in props.items()},
                        "required": req,
                    },
                },
            }
        )
    return out


def _user_task(rng: random.Random, s: Session) -> str:
    if not s.task:
        if s.agent == "writer":
            s.task = (
                f"Write article msg_0_{rng.randint(0, 9)}_{rng.randint(1, 40)}.md for this chunk of the session "
                "analysis in ocbrowse/ses_3f023736bffe5l8DNFRJbsYbwc_analysis."
            )
        elif s.lang == "zh":
            s.task = rng.choice(ZH_TASKS)
        elif s.agent == "opencode":
            s.task = rng.choice(OPENCODE_TASKS)
        else:
            s.task = rng.choice(REVIEW_TASKS)
    return s.task


def _error_body(r: Req) -> dict:
    return {"object": "error", "message": r.error_text, "type": "InternalServerError", "param": None, "code": 500}


def _proxy(g: _Gen) -> tuple[bytes, dict, dict]:
    rng = g.trng
    recs: list = []
    ids: dict = {}
    conn_reqs = sorted((r for s in g.sessions if s.source == "proxy" for r in s.reqs), key=lambda r: r.t_arr)
    for i, r in enumerate(conn_reqs):
        ids[id(r)] = f"c-{i + 1:05d}"
    counts = dict(req=0, resp=0, streamed=0, non_stream=0, errors=0)
    for s in (s for s in g.sessions if s.source == "proxy"):
        prev = None
        for r in s.reqs:
            conn = ids[id(r)]
            msgs = [
                {"role": "system", "content": f"You are the {s.agent} agent. Work in /home/dev/sglang. Use tools."},
                {"role": "user", "content": _user_task(rng, s)},
            ]
            if prev is not None and prev.get("calls"):
                cid, name, args = prev["calls"][0]
                msgs.append(
                    {
                        "role": "assistant",
                        "content": prev["content"],
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                            }
                        ],
                    }
                )
                msgs.append({"role": "tool", "tool_call_id": cid, "content": rng.choice(TOOL_RESULTS[name])})
            elif prev is not None:
                msgs.append({"role": "assistant", "content": prev["content"][:200]})
                msgs.append({"role": "user", "content": "Continue."})
            body = {
                "model": MODEL,
                "stream": r.stream,
                "messages": msgs,
                "tools": _tools_body(s.agent),
                "max_tokens": r.max_new,
                "chat_template_kwargs": {"thinking": True},
            }
            if r.stream:
                body["stream_options"] = {"include_usage": True}
            t_req = r.t_arr - rng.uniform(0.0015, 0.004)
            recs.append(
                (
                    t_req,
                    {
                        "ts": iso(t_req, 3),
                        "dir": "req",
                        "conn": conn,
                        "upstream": "http://pd-router:8000/v1/chat/completions",
                        "body": body,
                    },
                )
            )
            counts["req"] += 1
            t_resp = r.t_resp
            lat = int(round((t_resp - t_req) * 1000))
            resp = {"ts": iso(t_resp, 3), "dir": "resp", "conn": conn}
            counts["resp"] += 1
            if r.d_out != "ok":
                resp.update(status=500, latency_ms=lat, body=_error_body(r))
                counts["errors"] += 1
                recs.append((t_resp, resp))
                prev = None
                continue
            rep = _reply(g, r)
            r.reply = rep
            rid = f"chatcmpl-{_hex(rng, 24)}"
            usage = {
                "prompt_tokens": r.prompt,
                "completion_tokens": r.completion,
                "total_tokens": r.prompt + r.completion,
                "prompt_tokens_details": {"cached_tokens": r.cached},
                "reasoning_tokens": r.reasoning,
            }
            created = int(r.t_arr)
            tcs = [
                {"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
                for c, n, a in rep["calls"]
            ]
            if r.stream:
                counts["streamed"] += 1
                lines = []

                def chunk(delta, fin=None, t=created):
                    o = {
                        "id": rid,
                        "object": "chat.completion.chunk",
                        "created": t,
                        "model": MODEL,
                        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": fin}],
                    }
                    lines.append("data: " + json.dumps(o, ensure_ascii=False, separators=(",", ":")))

                chunk({"role": "assistant", "content": None, "reasoning_content": ""})
                reas = rep["reasoning"]
                for a in range(0, len(reas), 240):
                    chunk({"reasoning_content": reas[a : a + 240]})
                cont = rep["content"]
                for a in range(0, len(cont), 480):
                    chunk({"content": cont[a : a + 480]})
                for j, tc in enumerate(tcs):
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": j,
                                    "id": tc["id"],
                                    "type": "function",
                                    "function": {"name": tc["function"]["name"], "arguments": ""},
                                }
                            ]
                        }
                    )
                    chunk({"tool_calls": [{"index": j, "function": {"arguments": tc["function"]["arguments"]}}]})
                chunk({}, rep["finish"], int(t_resp))
                u = {
                    "id": rid,
                    "object": "chat.completion.chunk",
                    "created": int(t_resp),
                    "model": MODEL,
                    "choices": [],
                    "usage": usage,
                }
                lines.append("data: " + json.dumps(u, ensure_ascii=False, separators=(",", ":")))
                lines.append("data: [DONE]")
                resp.update(status=200, latency_ms=lat, raw=lines)
            else:
                counts["non_stream"] += 1
                msg = {
                    "role": "assistant",
                    "content": rep["content"] if rep["content"] or not tcs else None,
                    "reasoning_content": rep["reasoning"],
                    "tool_calls": tcs or None,
                }
                resp.update(
                    status=200,
                    latency_ms=lat,
                    body={
                        "id": rid,
                        "object": "chat.completion",
                        "created": created,
                        "model": MODEL,
                        "choices": [
                            {
                                "index": 0,
                                "message": msg,
                                "logprobs": None,
                                "finish_reason": rep["finish"],
                                "matched_stop": 1 if rep["finish"] == "stop" else None,
                            }
                        ],
                        "usage": usage,
                    },
                )
            recs.append((t_resp, resp))
            prev = rep
    recs.sort(key=lambda x: x[0])
    data = "".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for _, o in recs)
    counts["lines"] = len(recs)
    return data.encode(), counts, ids


def _opencode(g: _Gen) -> list[tuple[str, bytes, dict, dict]]:
    rng = g.trng
    oid = _OcIds(random.Random(g.seed * 977 + 3))
    files = []
    for s in (s for s in g.sessions if s.source == "opencode"):
        if not s.reqs:
            continue
        t_first = s.reqs[0].t_arr
        ses = oid("ses", t_first - 3.0)
        proj = _hex(rng, 40)
        msgs, ids = [], {}
        user_id = None
        prev_leak = False
        loop_break = True
        for r in s.reqs:
            if loop_break or prev_leak:
                tu = r.t_arr - rng.uniform(0.02, 0.08)
                user_id = oid("msg", tu)
                text = (
                    _user_task(rng, s)
                    if not msgs
                    else (
                        "The last tool call came back as plain text instead of running. Try again."
                        if prev_leak
                        else rng.choice(OPENCODE_TASKS if s.lang == "en" else ZH_TASKS)
                    )
                )
                msgs.append(
                    {
                        "info": {
                            "id": user_id,
                            "sessionID": ses,
                            "role": "user",
                            "time": {"created": _ms(tu)},
                            "agent": "build",
                            "model": {"providerID": "sglang-pd", "modelID": MODEL},
                        },
                        "parts": [
                            {"id": oid("prt", tu), "sessionID": ses, "messageID": user_id, "type": "text", "text": text}
                        ],
                    }
                )
            ta, tb = r.t_arr - rng.uniform(0.004, 0.012), r.t_resp
            mid = oid("msg", ta)
            ids[id(r)] = mid
            tokens = {
                "input": r.prompt - r.cached,
                "output": r.completion - r.reasoning,
                "reasoning": r.reasoning,
                "cache": {"read": r.cached, "write": 0},
            }
            info = {
                "id": mid,
                "sessionID": ses,
                "role": "assistant",
                "time": {"created": _ms(ta), "completed": _ms(tb)},
                "parentID": user_id,
                "modelID": MODEL,
                "providerID": "sglang-pd",
                "mode": "build",
                "agent": "build",
                "path": {"cwd": "/home/dev/sglang", "root": "/home/dev/sglang"},
                "cost": 0,
                "tokens": tokens,
            }
            parts = [{"id": oid("prt", ta + 0.05), "sessionID": ses, "messageID": mid, "type": "step-start"}]
            if r.d_out != "ok":
                info["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
                info["error"] = {
                    "name": "APIError",
                    "data": {
                        "message": r.error_text,
                        "statusCode": 500,
                        "isRetryable": True,
                        "responseBody": json.dumps(_error_body(r)),
                    },
                }
                msgs.append({"info": info, "parts": parts})
                loop_break, prev_leak = False, False
                continue
            rep = _reply(g, r)
            r.reply = rep
            t1 = ta + (tb - ta) * 0.1
            t2 = ta + (tb - ta) * rng.uniform(0.4, 0.8)
            if rep["reasoning"]:
                parts.append(
                    {
                        "id": oid("prt", t1),
                        "sessionID": ses,
                        "messageID": mid,
                        "type": "reasoning",
                        "text": rep["reasoning"],
                        "time": {"start": _ms(t1), "end": _ms(t2)},
                    }
                )
            if rep["content"]:
                parts.append(
                    {
                        "id": oid("prt", t2),
                        "sessionID": ses,
                        "messageID": mid,
                        "type": "text",
                        "text": rep["content"],
                        "time": {"start": _ms(t2), "end": _ms(tb)},
                    }
                )
            nxt = s.reqs[s.reqs.index(r) + 1].t_arr if s.reqs.index(r) + 1 < len(s.reqs) else tb + 2.0
            for cid, name, args in rep["calls"]:
                te = tb + min(2.0, (nxt - tb) * 0.8)
                parts.append(
                    {
                        "id": oid("prt", tb),
                        "sessionID": ses,
                        "messageID": mid,
                        "type": "tool",
                        "callID": cid,
                        "tool": name,
                        "state": {
                            "status": "completed",
                            "input": args,
                            "output": rng.choice(TOOL_RESULTS[name]),
                            "title": name,
                            "metadata": {},
                            "time": {"start": _ms(tb), "end": _ms(te)},
                        },
                    }
                )
            fin = "tool-calls" if rep["finish"] == "tool_calls" else "stop"
            info["finish"] = fin
            parts.append(
                {
                    "id": oid("prt", tb + 0.001),
                    "sessionID": ses,
                    "messageID": mid,
                    "type": "step-finish",
                    "reason": fin,
                    "cost": 0,
                    "tokens": tokens,
                }
            )
            msgs.append({"info": info, "parts": parts})
            prev_leak = r.corrupt is not None and r.corrupt[0] == "parse_leak"
            loop_break = r.final
        last_t = max(r.t_resp for r in s.reqs)
        doc = {
            "info": {
                "id": ses,
                "slug": "pd-wedge-" + s.sid[:4],
                "projectID": proj,
                "directory": "/home/dev/sglang",
                "title": _user_task(rng, s)[:60],
                "version": "1.0.112",
                "time": {"created": _ms(t_first - 3.0), "updated": _ms(last_t)},
            },
            "messages": msgs,
        }
        name = f"opencode-session-{ses}.json"
        counts = dict(
            sessions=1,
            messages=len(msgs),
            assistant_messages=sum(1 for m in msgs if m["info"]["role"] == "assistant"),
            user_messages=sum(1 for m in msgs if m["info"]["role"] == "user"),
        )
        files.append((name, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode(), counts, ids))
    return files


# -- entry point ------------------------------------------------------------------------------------


def _simulate(seed: int, scale: float) -> _Gen:
    g = _Gen(seed, scale)
    g.health = []
    g.health_count = {}
    g.dreqs = {(h, d): [] for h in DECODES for d in range(DP)}
    g.wedge_last = {}
    g.run()
    g.windows()
    g.corruption()
    return g


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


def _dump_planted(p: dict) -> str:
    """JSON with sorted keys, indented, but one line per record in the long lists of records."""
    out = []
    for k in sorted(p):
        v = p[k]
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            body = ",\n".join("    " + json.dumps(x, sort_keys=True, separators=(",", ":")) for x in v)
            out.append(f"  {json.dumps(k)}: [\n{body}\n  ]")
        else:
            txt = json.dumps(v, indent=2, sort_keys=True).replace("\n", "\n  ")
            out.append(f"  {json.dumps(k)}: {txt}")
    return "{\n" + ",\n".join(out) + "\n}\n"


def _planted(g: _Gen, files: dict, proxy_ids: dict, oc_ids: dict, oc_file: dict, seed: int, scale: float) -> dict:
    def reply_ref(r: Req) -> dict:
        if id(r) in proxy_ids:
            return dict(source="proxy", reply_id=proxy_ids[id(r)], file="agent/proxy.jsonl")
        return dict(source="opencode", reply_id=oc_ids[id(r)], file=oc_file[id(r)])

    agent_reqs = [r for r in g.reqs if r.sess is not None and r.sess.source]
    links = []
    for r in sorted(agent_reqs, key=lambda r: r.t_arr):
        links.append(
            dict(
                **reply_ref(r),
                room=r.room,
                decode_host=r.d_host,
                decode_rid=r.d_rid,
                prefill_rid=r.p_rid,
                prompt_tokens=r.prompt,
                completion_tokens=r.completion,
                reasoning_tokens=r.reasoning,
                cached_tokens=r.cached,
                t_request=iso(r.t_arr),
                t_response=iso(r.t_resp),
                status=200 if r.d_out == "ok" else 500,
            )
        )
    corrupted = []
    for r in sorted((r for r in agent_reqs if r.corrupt), key=lambda r: r.t_arr):
        corrupted.append(
            dict(
                **reply_ref(r),
                **{"class": r.corrupt[0]},
                subtype=r.corrupt[1],
                signatures=SIGNATURES[r.corrupt[1]],
                room=r.room,
                decode_host=r.d_host,
                decode_rank=r.d_rank,
                t_request=iso(r.t_arr),
                t_response=iso(r.t_resp),
                elevated=g.in_elevated(r),
                checksum_mismatch=r.ksum_mismatch,
            )
        )
    hard = [
        dict(
            **reply_ref(r),
            kind=r.hard_negative,
            room=r.room,
            **({"quoted": r.quoted} if r.hard_negative == "quoted_log" else {}),
        )
        for r in sorted(agent_reqs, key=lambda r: r.t_arr)
        if r.hard_negative
    ]
    errors = [
        dict(
            **reply_ref(r),
            room=r.room,
            decode_host=r.d_host,
            status=500,
            reason=r.d_out,
            error=r.error_text,
            t_response=iso(r.t_resp),
        )
        for r in sorted(agent_reqs, key=lambda r: r.t_arr)
        if r.d_out != "ok"
    ]
    ok = [r for r in agent_reqs if r.d_out == "ok"]
    el = [r for r in ok if g.in_elevated(r)]
    base = [r for r in ok if not g.in_elevated(r)]

    def rate(rs):
        k = sum(1 for r in rs if r.corrupt)
        return dict(replies=len(rs), corrupted=k, rate=round(k / len(rs), 4) if rs else None)

    slam_lines = [s for s in g.pstats if T0 + SLAM[0] <= s["t"] < T0 + SLAM[1]]
    pre_lines = [s for s in g.pstats if T0 <= s["t"] < T0 + SLAM[0]]
    storm_d = {
        h: sorted(
            r.t_dabort
            for r in g.reqs
            if r.kind == "swarm"
            and r.d_host == h
            and r.t_dabort is not None
            and r.d_out in ("aborted_transfer", "aborted_running")
        )
        for h in DECODES
    }
    storm0 = storm_d["decode-0"]
    stuck = sorted((r for r in g.reqs if r.d_out == "timeout"), key=lambda r: r.t_d_end)
    # the wedge from the scheduler's point of view: its last stats line, the first timeout it then
    # logged, and its first stats line after that
    w_start = max(v["t"] for v in g.wedge_last.values())
    w_end = stuck[0].t_d_end
    w_resumed = min(x[0] for x in g.lines["decode-1"] if x[2] == "decode_stats" and x[0] > w_start)
    d1 = CLOCK_OFFSET["decode-1"]
    fails = sorted(g.fault_reqs, key=lambda r: r.t_fail)
    ctx = g.ctx_req
    return {
        "generator": {"module": "tools.samplegen", "format_version": 1, "seed": seed, "scale": scale},
        "t0": iso(T0),
        "t_end": iso(max(r.t_resp or r.t_d_end or r.t_arr for r in g.reqs)),
        "model": MODEL,
        "hosts": {
            h: dict(
                role="prefill" if h == PREFILL else "decode",
                ip=HOST_IP[h],
                dp_size=DP,
                clock_offset_s=CLOCK_OFFSET[h],
                main_pid=MAIN_PID[h],
                scheduler_pids={str(d): SCHED_PID0[h] + d for d in range(DP)},
                nixl_agents={str(d): g.agents[h][d] for d in range(DP)},
                cri_prefix=h == "decode-1",
            )
            for h in HOSTS
        },
        "clock_offset": {
            "host": "decode-1",
            "reference_host": PREFILL,
            "offset_s": d1,
            "meaning": "decode-1 host clock minus prefill-0 clock (= true UTC); applies to its sglang "
            "prefixes, its CRI timestamps and its trace ts",
        },
        "windows": {
            "slam": {
                "host": PREFILL,
                "start": iso(T0 + SLAM[0]),
                "end": iso(T0 + SLAM[1]),
                "backlog_cleared": iso(g.backlog_cleared),
                "requests": sum(1 for r in g.reqs if r.kind == "writer" and T0 + SLAM[0] <= r.t_arr < T0 + SLAM[1]),
                "peak_queue_req": max((s["queue_req"] for s in slam_lines), default=0),
                "baseline_peak_queue_req": max((s["queue_req"] for s in pre_lines), default=0),
                "new_token_rate": round(sum(s["new_token"] for s in slam_lines) / (SLAM[1] - SLAM[0]), 1),
                "baseline_new_token_rate": round(sum(s["new_token"] for s in pre_lines) / SLAM[0], 1),
            },
            "storm": {
                "host": "decode-0",
                "start": iso(storm0[0]),
                "end": iso(storm0[-1]),
                "agent_sessions": SWARM_SESSIONS,
                "agent_start": iso(T0 + SWARM_START),
                "agent_killed": iso(T0 + SWARM_KILL),
                "aborted_requests": len(storm0),
                "aborted_requests_by_host": {h: len(v) for h, v in storm_d.items()},
                "aborted_rooms": sorted(r.room for r in g.reqs if r.kind == "swarm" and r.d_host == "decode-0"),
                "aborted_in_transfer": sum(
                    1 for r in g.reqs if r.kind == "swarm" and r.d_host == "decode-0" and r.d_out == "aborted_transfer"
                ),
            },
            "wedge": {
                "host": "decode-1",
                "start": iso(w_start),
                "end": iso(w_end),
                "start_host_clock": iso(w_start + d1),
                "end_host_clock": iso(w_end + d1),
                "resumed": iso(w_resumed),
                "ended_by": "waiting_timeout",
                "last_stats_lines": {
                    str(d): dict(
                        ts=iso(v["t"]),
                        running_req=v["running_req"],
                        transfer_req=v["transfer_req"],
                        prealloc_req=v["prealloc_req"],
                        queue_req=v["queue_req"],
                    )
                    for d, v in sorted(g.wedge_last.items())
                },
                "in_flight": sum(v["running_req"] + v["transfer_req"] for v in g.wedge_last.values()),
                "running_at_start": sum(v["running_req"] for v in g.wedge_last.values()),
                "stuck_rooms": [r.room for r in stuck],
                "stuck": [
                    dict(
                        room=r.room,
                        decode_rank=r.d_rank,
                        prefill_rank=r.p_rank,
                        decode_rid=r.d_rid,
                        prefill_rid=r.p_rid,
                        outcome="waiting_timeout",
                        t_outcome=iso(r.t_d_end),
                        later_failures=["bootstrap_timeout"] if r.p_out == "bootstrap_timeout" else [],
                        t_later=iso(r.t_p_end) if r.p_out == "bootstrap_timeout" else None,
                    )
                    for r in stuck
                ],
                "bootstrap_timeout_rooms": [r.room for r in stuck if r.p_out == "bootstrap_timeout"],
                "timeout_s": WAIT_TIMEOUT,
                "arrivals_during": sum(1 for r in g.reqs if r.d_host == "decode-1" and w_start < r.t_arr < w_end),
                "health": dict(
                    probe_ip=KUBELET_IP,
                    probe_interval_s=PROBE_S,
                    probes_503=g.health_503,
                    failed_interval_s=HEALTH_FAIL_S,
                    health_check_failed=len(g.health_fails),
                    first_failed=iso(g.health_fails[0]),
                    last_failed=iso(g.health_fails[-1]),
                ),
            },
            "transfer_failures": {
                "prefill_host": PREFILL,
                "prefill_dp_rank": FAULT_PATH[0],
                "host": FAULT_PATH[1],
                "decode_dp_rank": FAULT_PATH[2],
                "start": iso(fails[0].t_fail),
                "end": iso(fails[-1].t_p_end),
                "rooms": [r.room for r in fails],
                "worker_error_room": fails[0].room,
                "status": "NIXL_ERR_BACKEND",
            },
            "elevated_corruption": [dict(w, start=iso(w["start"]), end=iso(w["end"])) for w in g.elevated],
        },
        "checksum_mismatch_rooms": [
            dict(
                room=r.room,
                kind="index_k",
                chunk=None,
                decode_host=r.d_host,
                decode_rank=r.d_rank,
                prefill_rank=r.p_rank,
                decode_rid=r.d_rid,
                prefill_rid=r.p_rid,
                prefill_checksum=r.ksum,
                decode_checksum=r.ksum_d,
                logged=True,
            )
            for r in g.ksum_rooms
        ],
        "context_corruption": dict(
            host=ctx.d_host,
            rank=ctx.d_rank,
            rid=ctx.d_rid,
            room=ctx.room,
            metadata_room=ctx.metadata_room,
            metadata_buffer_index=17,
            ts=iso(ctx.t_kv),
        ),
        "replies": dict(
            total=len(agent_reqs),
            ok=len(ok),
            errors=len(errors),
            corrupted=len(corrupted),
            hard_negatives=len(hard),
            proxy=sum(1 for r in agent_reqs if id(r) in proxy_ids),
            opencode=sum(1 for r in agent_reqs if id(r) in oc_ids),
        ),
        "corruption_rates": {
            "baseline": rate(base),
            "elevated": rate(el),
            "target_baseline": P_BASE,
            "target_elevated": P_HIGH,
            "target_after_failures": P_AFTER_FAIL,
        },
        "corrupted_replies": corrupted,
        "hard_negatives": hard,
        "error_replies": errors,
        "reply_links": links,
        "requests": dict(
            total=len(g.reqs),
            health_checks={PREFILL: len(g.health), **g.health_count},
            by_agent={a: sum(1 for r in g.reqs if r.kind == a) for a in ("opencode", "reviewer", "writer", "swarm")},
        ),
        "files": files,
        "stats_lines": {rel: f["stats_lines"] for rel, f in files.items() if "stats_lines" in f},
        "line_kind_rules": [list(x) for x in LINE_KIND_RULES],
        "cri_prefix_pattern": CRI_RE,
    }


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


if __name__ == "__main__":
    sys.exit(main())
