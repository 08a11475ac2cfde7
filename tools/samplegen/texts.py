"""What the agents write: text banks, tool results, and the corrupted and hard-negative replies."""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

from tools import loglines
from tools.samplegen.ids import _pfx_time
from tools.samplegen.records import Req
from tools.samplegen.scenario import CLOCK_OFFSET, DP, DSML, EOS, PREFILL, T0, W0, W1

if TYPE_CHECKING:  # the simulation imports this module
    from tools.samplegen.simulation import _Gen

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
