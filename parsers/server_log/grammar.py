"""The grammar of SGLang server logs, as data: wrappers, line families, event kinds, failure
reasons, identifiers, stats keys (docs/formats/SGLANG.md).

The polars path runs these patterns; the native scanner (parsers/_fastlog.c) is configured from
the same tables (`scanner.py`), and every rule here has a sample (tests/test_grammar.py).
"""

from __future__ import annotations

import re

from forensics.core.schema import RANKS


def lit(text: str) -> str:
    """`text` as a regex matching it literally (only the metacharacters escaped)."""
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


def alt(literals) -> str:
    return "|".join(lit(x) for x in literals)


# --- outer wrappers added by log shippers ("Shipper and launcher wrappers"), tried in order ---
RE_CRI = r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})) (?:stdout|stderr) ([FP]) ?(.*)$"
DOCKER_JSON_LEAD = '{"log":'
RE_DOCKER_JSON = "^" + lit(DOCKER_JSON_LEAD)
# a JSON line that is no docker record: a response body pasted into the log (SGLang's /generate
# body, an OpenAI error body) or a structured logger's record. Its message is read from the first
# of JSON_MESSAGE_PATHS it holds; a JSON line with none of them stays unparsed.
JSON_BODY_LEAD = "{"
RE_JSON_BODY = "^" + lit(JSON_BODY_LEAD)
JSON_MESSAGE_PATHS = (
    "$.meta_info.finish_reason.message",  # /generate: an abort's text (Decode transfer failed ...)
    "$.finish_reason.message",  # --export-metrics-to-file records: meta_info's keys at the top
    "$.error.message",  # OpenAI `{"error": {"message": ...}}`, also in a stream's error chunk
    "$.message",  # OpenAI `{"object": "error", "message": ...}`; structured loggers
    "$.msg",  # structured loggers that name the field msg (zap, pino)
)
# Dynamo's JSON Lines (DYN_LOGGING_JSONL=1): its record's time, level and target are read as its
# compact line would print them (RE_DYNAMO); a line of its Python bridge has target `log` and the
# logger's own in a field `log.target` (flattened, the dot in its name) (docs/formats/OTHER_ENGINES.md,
# "What is read of them")
JSON_TRACING_TIME, JSON_TRACING_LEVEL = "$.time", "$.level"
JSON_TRACING_TARGETS = ("$['log.target']", "$.log.target", "$.target")
RE_DOCKER_T = r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})) (.*)$"
RE_KIBANA = r"^([A-Z][a-z]{2} [0-9]{1,2}, [0-9]{4} @ [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?)[\t ]+(.*)$"
# tqdm bars, a stray backtick, anything glued in front of a sglang prefix
# (a time-only prefix counts only with a rank tag: a tqdm bar's own `[00:01<00:00]` is no time)
RE_GLUED = (
    r"^([^\[].*?)(\[(?:(?:[0-9]{4}-)?[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?(?: [A-Za-z_]+[0-9]+)*"
    r"|[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?(?: [A-Z_]+[0-9]+)+)\].*)$"
)
# a launcher's own bracketed stamp (and its tags) before SGLang's: `[<time>] [launcher] [<sglang
# prefix>] ...` or `[<time>][file:line][LEVEL]: [<sglang prefix>] ...`; the line is SGLang's, dated by
# the later stamp (issue 42: the engine's own stamp, the one later in the line)
SGLANG_STAMP = (
    r"\[(?:(?:[0-9]{4}-)?[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?(?: [A-Za-z_]+[0-9]+)*"
    r"|[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?(?: [A-Z_]+[0-9]+)+)\]"
)
STAMPED_LEAD = r"\[[0-9][^\[\]]*\](?:\[[^\[\]]*\]|[: ])*?"
RE_STAMPED_LEAD = rf"^({STAMPED_LEAD})({SGLANG_STAMP}.*)$"
# Ray's `(Name pid=N) ` / `(Name pid=N, ip=A) ` in front of each line of an actor or launcher, and
# vLLM's process prefix of the same shape (`(EngineCore_DP0 pid=N) `, `(VllmWorker rank=1 pid=N) `)
RE_RAY = r"^(\((?:[A-Za-z_][\w.:-]*(?: rank=[0-9]+)? )?pid=[0-9]+(?:, ip=[0-9a-fA-F.:]+)?\)) +(.*)$"
# and what Ray's log deduplication appends to such a line: part of the wrapper, not of the message
RE_RAY_REPEATED = r" *(\[repeated [0-9]+x across cluster\])$"
# unittest progress dots printed without a newline before a line; only before what starts a log
# line or a traceback, so an ellipsis in text is left alone
RE_DOTS = r"^(\.+)((?:Traceback \(|\[|[A-Z][a-z]).*)$"
# Two processes writing to one stderr: a native crash dump's head or a glog line lands after
# another writer's unfinished line (`  File "/x/utils.pyFatal Python error: Segmentation fault`).
# Only heads no message puts mid-word, and only right after a word character, `.` or `)`: a
# message that quotes one puts a space, a quote or a colon before it. The text before goes to
# `prefix`; a line that starts with a log prefix keeps its own kind (classify._strip_glued_heads)
GLUED_HEADS = (
    r"Fatal Python error: |!+ Segfault encountered|(?:\[[^\]\s]+:[0-9]+ *(?::[0-9]+)+\] +)?Caught signal [0-9]+ \("
    r"|[IWEF][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +[0-9]+ [^ :\]]+:[0-9]+\] "
)
RE_GLUED_HEAD = rf"^(.*?[\w.)])((?:{GLUED_HEADS}).*)$"
# what every line RE_GLUED_HEAD splits holds, cheap to test first: a crash head's words, or a glog
# head's time; and the glog head that starts a line of its own (never split)
GLUED_HEAD_WORDS = ("Fatal Python error: ", "Segfault encountered", "Caught signal ")
RE_GLOG_TIME = r"[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} "
RE_GLOG_LEAD = r"^[IWEF][0-9]{4} "
WRAPPERS: list[tuple[str, str]] = [
    ("docker_json", RE_DOCKER_JSON),
    ("json_body", RE_JSON_BODY),
    ("k8s_cri", RE_CRI),
    ("docker_t", RE_DOCKER_T),
    ("kibana", RE_KIBANA),
    ("ray", RE_RAY),
    ("unittest_dots", RE_DOTS),
    ("glued", RE_GLUED),
    ("stamped_lead", RE_STAMPED_LEAD),
    ("glued_head", RE_GLUED_HEAD),
]

# --- line families, in the order of "Classification order" -------------------------------------
# rank tags by the rank columns: dp_rank -> DP, attn_cp_rank -> ATTN_CP
RANK_TAGS = tuple(r.removesuffix("_rank").upper() for r in RANKS)
# The date is optional: 2024 builds print `[16:43:29 TP0]`, the date then comes from context
# (passes.clock_pass).
RE_SGLANG = (
    r"^\[(?:([0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}-[0-9]{2}) )?([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{3}))?"
    rf"((?: (?:{'|'.join(RANK_TAGS)})[0-9]+)*)(?: (?:encode_server|encode_dp_worker\[[0-9]+\]))?\] ?(.*)$"
)
# SGLANG_LOGGING_CONFIG_PATH style: [date time][file.py:line][LEVEL]: message
RE_SGLANG_CUSTOM = (
    r"^\[([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,]([0-9]{3}))?\]\[[^\]]*\]\[([A-Z]+)\]:? ?(.*)$"
)
RE_UVICORN_LEVEL = r"^(INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s+(.*)$"
RE_GLOG = r"^([IWEF])([0-9]{2})([0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+) +([0-9]+) ([^ :\]]+):([0-9]+)\] ?(.*)$"
# the `[epoch] [host:pid:thr]` head is missing when UCX logs before its own setup or a user
# pastes only the message part: `file.c:N  UCX  LEVEL  message` is UCX all the same
RE_UCX = r"^(?:\[([0-9]{9,11}\.[0-9]+)\] +\[([^:\]]+):([0-9]+) *:([0-9]+)\] +)?([\w.]+\.(?:c|cc|cpp|h|inl)):([0-9]+) +UCX +([A-Z]+) *(.*)$"
RE_C10D = r"^\[rank([0-9]+)\]:\[([IWEF])([0-9]{1,2})([0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2})\.([0-9]+) ([^:\]]+):([0-9]+)\] ?(.*)$"
RE_NCCL = r"^([\w.-]+):([0-9]+):([0-9]+) \[([0-9]+)\] NCCL (WARN|INFO|ERROR|TRACE|ABORT) ?(.*)$"
# sgl-router (Rust, `tracing`, its full format): `<date> <time> <LEVEL> [<span>{<fields>}:...: ]<module::target>:
# <src/file.rs>:<line>: <message>`; the request's span (`http_request{... request_id="..."}`) names its id
RE_ROUTER = (
    r"^([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?) +(TRACE|DEBUG|INFO|WARN|ERROR) +"
    r"((?:[\w-]+(?:\{[^}]*\})?:)*[\w-]+(?:\{[^}]*\})?: )?"
    r"([A-Za-z_]\w*(?:::\w+)*): (?:([\w./-]+\.rs):([0-9]+): )?(.*)$"
)
# What the router says when it could not serve a request (docs/formats/OTHER_ENGINES.md, "sgl-router"):
# a server answered non-2xx, the client got a 5xx, or no prefill or decode worker could take it.
# (reason, the message's start): the kind `router_failure` matches any of them, REASON_RULES names which
ROUTER_FAILURES = (
    ("decode_error_status", r"Decode server returned error status"),
    ("prefill_error_status", r"Prefill server returned error status"),
    ("no_workers", r"Failed to select PD pair|No (?:available )?(?:prefill|decode) workers|No available servers"),
    ("server_error", r"request failed with server error"),
)
RE_ROUTER_FAILURE = "|".join(p for _, p in ROUTER_FAILURES)
# the router's health checker giving up on a worker (`Worker http://h:p health check failed`): a
# signal of the router's host naming the worker as its peer, not a request's failure
RE_ROUTER_HEALTH = r"[Hh]ealth check failed|(?:[Mm]arked|[Mm]arking) (?:as )?unhealthy"

# --- other engines' own lines (docs/formats/OTHER_ENGINES.md, "What is read of them") ----------
# vLLM's logger: `LEVEL MM-DD HH:MM:SS [file.py:line] msg`, no year and no fraction, the process's
# local time; no bracket before the file before spring 2025. Its process prefix, `(EngineCore_DP0
# pid=N) `, is peeled as Ray's is (RE_RAY).
RE_VLLM = (
    r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) ([0-9]{2}-[0-9]{2}) ([0-9]{2}:[0-9]{2}:[0-9]{2}) "
    r"\[?([^\s\]]+):([0-9]+)\] ?(.*)$"
)
# vLLM's formatter copies a record's head onto every line of a multi-line message: the lines after
# the first, under the same head, are a traceback's (or a dump's) body, not records of their own
VLLM_BODY = r"^(?:\s|Traceback \(most recent|During handling of|The above exception|\^+\s*$|$|[\w.]*(?:Error|Exception|Exit|Interrupt|Fault|Timeout)\b)"
# TensorRT-LLM's Python logger: `[MM/DD/YYYY-HH:MM:SS] [TRT-LLM] [RANK n] [I] msg` (local time; the
# stamp is missing when another program set the root logger up), its tags in any order, the
# level a letter `[FEWIV]`, or a word in the 2026 C++ logger's `[TRT-LLM] [ERROR] [module] [RANK n] `
RE_TRTLLM = r"^(?:\[([0-9]{2}/[0-9]{2}/[0-9]{4})-([0-9]{2}:[0-9]{2}:[0-9]{2})\] )?\[TRT-LLM\]((?: ?\[[^\]]*\])+) (.*)$"
TRTLLM_LEVEL = r"\[([FEWIV]|TRACE|DEBUG|INFO|WARNING|ERROR)\]"
TRTLLM_RANK = r"\[(?:MPI_Rank|RANK) ([0-9]+)\]"
# its C++ logger before 2026: `[TensorRT-LLM][ERROR] msg`, no time at all; and the version line
# `import tensorrt_llm` prints, `[TensorRT-LLM] TensorRT-LLM version: 1.1.0`, with no level
RE_TRTLLM_CPP = r"^\[TensorRT-LLM\](?:\[(TRACE|DEBUG|INFO|WARNING|ERROR)\])? ?(.*)$"
# vLLM's process names carry the worker's ranks: `Worker_TP1`, `Worker_DP0_PP0_TP1_EP1`,
# `EngineCore_DP0`, `VllmWorker rank=1`
VLLM_TP = r"^\((?:\w*_)?TP([0-9]+)[ _]|^\(\w+ rank=([0-9]+) pid="
VLLM_DP = r"^\((?:\w*_)?DP([0-9]+)[ _]"
# Dynamo's Rust tracing, compact: `<RFC 3339 UTC>Z <LEVEL right-aligned> [span:span: ]<target>: msg`;
# a docker or kubectl stamp in front is peeled as a wrapper, which takes Dynamo's own stamp with it
# when it is the only one (its time is the same instant). The target is a `::` module path, or
# `module.function` for a line of its Python bridge
RE_DYNAMO = (
    r"^ *(?:([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})) +)?"
    r"(TRACE|DEBUG|INFO|WARN|ERROR) +((?:[A-Za-z_][\w-]*:)*[A-Za-z_][\w-]*: )?"
    r"([A-Za-z_]\w*(?:::\w+)+|[A-Za-z_]\w*\.[A-Za-z_][\w.]*): (.*)$"
)
# The engines' P/D (KV connector, cache transceiver, KV router) failures, by kind, from their
# sources' templates (docs/formats/OTHER_ENGINES.md, "P/D failures of other engines"); first match
# wins. A line naming a request is a failed request of it, one naming none a signal of its host.
ENGINE_KIND_RULES: list[tuple[str, str]] = [
    (
        "bootstrap_failed",
        r"^Handshake failed for request|^Handshake with \S+ failed|Error processing Mooncake handshake"
        r"|NIXL compatibility hash mismatch|Remote NIXL agent engine ID mismatch|Failed to decode NixlHandshakePayload",
    ),
    (
        "transfer_failed",
        # vLLM NixlConnector, decode side then prefill side
        r"^NIXL transfer (?:failed|exception|setup/initiation failed) for request|^NIXL send_notif failed for request"
        r"|^Releasing expired KV blocks for request|^Potentially invalid KV blocks for unrecognized request"
        # vLLM MooncakeConnector (and its vendored forks)
        r"|^Error happens during tranfering kvcache|^MooncakeAgentMetadata transfer failed|^Mooncake transfer failed for request"
        r"|^Request \S+ timed out after [0-9]+ seconds without being sent|^Error in Mooncake sender thread"
        # TensorRT-LLM's cache transceiver and executor
        r"|^(?:Unknown error|Error) occurred during (?:context|generation) transfer for request"
        r"|^Future returned unexpected status for request|request \S+ due to KV cache transfer timeout"
        r"|^Request \S+ timed out waiting for context KV cache transfer"
        # Dynamo's KV router: a prefill or decode leg of the request is gone
        r"|^Failed to mark prefill completed for request|^Failed to free request",
    ),
    # the decode side recovered what the lines above marked invalid (no id), or dropped KV transfer for
    # a request whose params were incomplete: warnings that explain an incident
    (
        "transport_warning",
        r"^Recovered from KV load failure|^Got invalid KVTransferParams|^Request \S+ not found in reqs_need_send",
    ),
    ("mooncake_error", r"Mooncake Transfer Engine initialization failed|Mooncake batch memory registration failed"),
    # the engine process died: vLLM's engine core, and the front end's error for every request after it
    (
        "exception",
        r"^EngineCore encountered a fatal error|^EngineCore failed to start|EngineDeadError|^Traceback \(most recent call last\)",
    ),
]
# A request id in those lines: vLLM's `cmpl-…`/`chatcmpl-…` and Dynamo's UUIDs after `request`,
# TensorRT-LLM's numeric ids, the Python list MooncakeConnector prints (its first id)
ENGINE_RID_PATTERNS = [
    r"\b[Rr]equest ([\w.-]*[0-9][\w.-]*?)(?:[.,:]? |[.,:]?$)",
    r"\bremote_request_id=([\w.-]+?)(?:[.,]? |[.,]?$)",
    r"\bfor \['([^']+)'",
]
ENGINE_FAMILIES = ("vllm", "trtllm", "dynamo")
# The heads of native crash dumps, printed raw to stderr: torch's `!!!!!!! Segfault encountered !!!!!!!`,
# faulthandler's `Fatal Python error: <what>`, UCX's `[host:pid:thr:tid] Caught signal N (...)` (the
# bracket may be missing), and the launcher's line when a scheduler child died. Their frames follow
# as continuation lines (CRASH_BODY and the indented frames of RE_TB).
RE_CRASH = (
    r"^(?:!+ Segfault encountered !+|Fatal Python error: |Child process unexpectedly failed with an exit code"
    r"|terminate called after throwing an instance of "
    r"|\s*(?:\[[^\]\s]+:[0-9]+ *(?::[0-9]+)+\] +)?Caught signal [0-9]+ \()"
)
# glog's notice from a NIXL / Mooncake library initialised before InitGoogleLogging: not uvicorn's `WARNING:`
RE_GLOG_NOTICE = r"^WARNING: Logging before InitGoogleLogging\(\) is written to STDERR"
# aiohttp's Common Log Format of sglang's bootstrap server and Mooncake's metadata server:
# `<peer> [26/Jun/2025:02:04:08 +0000] "PUT /route HTTP/1.1" 200 155 "-" "<agent>"`
RE_AIOHTTP_ACCESS = (
    r'^\S+ (?:- \S+ )?\[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4}\] "\S+ \S+ HTTP'
)
# stats leaders -> side; `new fill batch. #seq: 1. #cached_token: 330. ...` is the wording of
# May 2024 builds, with `. ` between items (STATS_DOT_SEP)
STATS_LEADERS = {"Prefill": "prefill", "Decode": "decode", "new fill": "prefill"}
STATS_SIDES = tuple(STATS_LEADERS)
# mid-2024 builds print the GPU id before the leader, with no time: `[gpu=0] Decode batch. ...`
STATS_GPU_TAG = r"\[gpu=[0-9]+\] "
RE_STATS = rf"^(?:{STATS_GPU_TAG})?({'|'.join(STATS_SIDES)}) batch(?: \[([0-9]+)\])?[.,] ?(.*)$"
# A custom logging config (SGLANG_LOGGING_CONFIG_PATH) or a framework's own logger may put any
# head before a stats line (match the leaders anywhere in the line: docs/formats/SGLANG.md,
# "Shipper and launcher wrappers"); a line no family took is a stats line when its leader follows
# such a head, and the head's date and time, when it has them, are the line's local time.
RE_STATS_ANYWHERE = (
    rf"^(.*?\S)\s*((?:{STATS_GPU_TAG})?(?:{'|'.join(STATS_SIDES)}) batch(?: \[[0-9]+\])?[.,] "
    r"#.*)$"
)
RE_HEAD_TIME = r"([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,]([0-9]{3}))?"
# the leaders of the `. `-separated wording, and an item's end in it: a value (a number, a
# percentage) then `. `
STATS_DOT_LEADERS = ("new fill",)
STATS_DOT_SEP = r"([0-9%])\. "

# Python traceback bodies; an `ExcType: msg` line counts only right after an indented line.
TB_HEADER = r"Traceback \(most recent call last\)"
TB_CHAIN = r"During handling of the above exception|The above exception was the direct cause"
# the unindented lines of a crash dump: faulthandler's thread headers and module list, UCX's
# backtrace banner and its closing rule; PyTorch's c10 native frame list after a watchdog, an
# abort or an uncaught c10::Error (docs/formats/OTHER_ENGINES.md, "c10 native frames"), and
# CUDA's notice that it writes a GPU core dump
C10_FRAMES = r"Exception raised from \S+ at \S+ \(most recent call first\):|frame #[0-9]+: |<omitting python frames>"
CUDA_COREDUMP = r"(?:\[[0-9:.]+\] )?(?:CUDA )?coredump: "
# py-spy's `dump` of a live process (docs/formats/OTHER_ENGINES.md, "py-spy dumps"): `Process <pid>:
# <cmdline>`, `Python v<version> (<exe>)`, then per thread `Thread <tid> (idle|active|active+gil)[:
# "<name>"]` and its frames, innermost first, indented (`    <func> (<file>:<line>)`). SGLang's
# watchdog logs one under `Pyspy dump for PID <pid>:`
PYSPY_PROCESS = r"Process [0-9]+: "
PYSPY_THREAD = r"Thread (?:0x[0-9A-Fa-f]+|[0-9]+) \((?:idle|active)[^)]*\)"
PYSPY_HEAD = r"Pyspy dump for PID [0-9]+"
CRASH_BODY = (
    r"(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):|Extension modules: |=+ backtrace|=+$"
    rf"|{C10_FRAMES}|{CUDA_COREDUMP}|{PYSPY_PROCESS}|Python v[0-9]+\.[0-9]+\S* \(|{PYSPY_THREAD}"
)
RE_CRASH_BODY = rf"^(?:{CRASH_BODY})"
# the banners that begin a dump's frames: under a record that is no crash (the dump's head was
# lost, or never printed) one opens the crash record itself
CRASH_OPEN = (
    r"=+ backtrace \(tid|(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):"
    rf"|{PYSPY_PROCESS}|{PYSPY_THREAD}"
)
RE_PYSPY_PROCESS = rf"^{PYSPY_PROCESS}"
RE_CRASH_OPEN = rf"^(?:{CRASH_OPEN})"
# a header after unittest dots (`.Traceback (most recent call last):`) is a header all the same,
# whether or not a wrapper rule took the dots off
RE_TB_OPEN = rf"^\.*{TB_HEADER}"
RE_TB = rf"^(?:\s+\S|\.*{TB_HEADER}:|{TB_CHAIN}|\s*\^+\s*$|{CRASH_BODY})"
RE_TB_CHAIN = rf"^(?:{TB_CHAIN})"
EXC_TYPE = r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|Timeout)"
RE_EXC_LINE = rf"^({EXC_TYPE}?)(?::\s.*)?$"
# the line that says what was raised, `ExcType: msg` or `ExcType(...)`: a frame tail without one
# (a lone `  File "..."` line) shows no exception, and opens no record of its own
RE_EXC_RAISED = rf"^{EXC_TYPE}(?:[:(]|$)"
# The lines a block must not start with (parsers/lines.py): an indented line, a traceback header or
# chain line, a blank line (one stands around a chain line, and the line after it may be cut
# short by the read), an `ExcType: msg` line; conservative where RE_TB needs the line above.
CONTINUES = re.compile(
    rf"[ \t]|{TB_HEADER}|{TB_CHAIN}|\r?\n|{EXC_TYPE}(?::|\r?\n)|(?:Current thread|Thread) 0x"
    r"|Extension modules: |=|Exception raised from |frame #[0-9]|<omitting python frames>|(?:CUDA )?coredump: "
    r"|Process [0-9]+: |Python v[0-9]|Thread [0-9]+ \((?:idle|active)".encode()
)

# --- request logs ("Request logs"): the leaders of their messages, by kind ----------------------
REQUEST_LEADERS = {"request_received": ("Receive: ", "Receive OpenAI: "), "request_finished": ("Finish: ",)}
REQUEST_JSON_EVENT = '"event"'  # the JSON request log's key: `"event": "request.received"`

# --- event kinds of sglang messages, first match wins -------------------------------------------
# the transfer libraries' own warnings that explain an incident (docs/formats/NIXL.md, "Transport
# warnings"): Mooncake's NIC taken out of use and its timed-out batch, NIXL's UCX requests
# cancelled, a metadata session's header lost. Their glog lines of levels below E are this kind;
# an E line stays the library's error
RE_TRANSPORT_WARNING = (
    r"Too many errors found in local RNIC|Sync batch data transfer timeout|Unexpected UCX error"
    r"|Session::readHeader failed"
)
# The two warn-once texts of the PD timeouts, as far as a cut line still says which one it is:
# prefill's KVSender prints the first (SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT), decode's
# KVReceiver the second (SGLANG_DISAGGREGATION_WAITING_TIMEOUT)
PD_BOOTSTRAP_TIMEOUT = r"Some requests timed out when"
PD_WAITING_TIMEOUT = r"Some requests fail to receive KV"
RE_PD_TIMEOUT = rf"{PD_BOOTSTRAP_TIMEOUT}|{PD_WAITING_TIMEOUT}"
KIND_RULES: list[tuple[str, str]] = [
    ("request_received", rf'^(?:{alt(REQUEST_LEADERS["request_received"])})|{REQUEST_JSON_EVENT}: ?"request\.received'),
    ("request_finished", rf'^(?:{alt(REQUEST_LEADERS["request_finished"])})|{REQUEST_JSON_EVENT}: ?"request\.finished'),
    (
        "corruption_detected",
        r"Context corruption detected|Metadata unexpectedly not ready|Metadata corruption detected",
    ),
    ("checksum_mismatch", r"[Cc]hecksum mismatch"),
    # a py-spy dump of a live process: a snapshot of where it is stuck, not a crash
    ("hang_dump", rf"^{PYSPY_HEAD}|^{PYSPY_PROCESS}|^{PYSPY_THREAD}"),
    # a launcher line or a native crash dump's head (RE_CRASH): the process is gone
    (
        "crash",
        rf"Child process unexpectedly failed|Segfault encountered|^Fatal Python error: |Caught signal [0-9]+ \("
        r"|^terminate called after throwing"
        rf"|^(?:{CRASH_OPEN})",
    ),
    # SGLang's own warn-once lines when PD requests time out (docs/formats/SGLANG.md, "Warnings about requests in trouble"): printed once per
    # rank, naming no request; the per-request KVTransferError lines follow them
    ("pd_timeout", RE_PD_TIMEOUT),
    # the decode side's heartbeat to a prefill's bootstrap server failed (docs/formats/SGLANG.md, "Bootstrap, heartbeat and abort control")
    ("heartbeat_failed", r"^Attempting to reconnect to "),
    (
        "bootstrap_failed",
        r"Prefill bootstrap failed|Decode handshake failed|Could not fetch (?:prefill parallel|bootstrap) info"
        r"|Error fetching prefill parallel info"
        r"|Failed to get prefill server info|Error fetching prefill server info|bootstrap_thread died"
        r"|Lost connection with prefill instance|failed to register to bootstrap|register attempt [0-9]+/[0-9]+ failed"
        r"|Failed to query dp_ranks|Failed to register prefill dp_rank",
    ),
    (
        "transfer_failed",
        r"Prefill transfer failed|Decode transfer failed|Unexpected transfer worker error|NIXL transfer encountered ERR"
        r"|NIXL transport error|NIXL staging transfer failed|KVSender failed to post|Failed to send (?:kv chunk|state components|aux data)"
        r"|failed due to node failure|KVSender transfer encountered an error|Failed to read NIXL transfer state"
        r"|left a handle running|NIXL bulk transfer failed|Failed to post prepared state transfer|Missing aux index"
        r"|^Session \S+ failed\.|Failed to transfer data from|AUX_DATA length mismatch"
        r"|KVSender failed to create|NIXL transfers could not be retired|Prefill transfer kvcache error",
    ),
    (
        "abort",
        r"^Abort |Aborted by |Abort request for rid|Abort in waiting queue|abort notification for room|ABORT_ACK"
        r"|Request (?:waiting|running) timeout reached|Failed to notify KV sender of abort|Malformed ABORT",
    ),
    # NIXL peers: disconnect / reconnect with SGLANG_DISAGGREGATION_NIXL_ENABLE_RECONNECT, and the
    # agent's own disconnect lines: docs/formats/NIXL.md, "Failure and abort texts" and
    # "Agent errors around transfers"
    (
        "peer_disconnect",
        r"NIXL peer \S+ disconnected|NIXL invalidated remote agent|remote agent '[^']*' was (?:disconnected|invalidated)",
    ),
    ("peer_reconnect", r"Reconnected NIXL peer"),
    ("transport_warning", RE_TRANSPORT_WARNING),
    ("peer_register", r"Register KVArgs from \S+ successfully|Peer \S+ was already registered"),
    # nixl._bindings / nixl_cu12._bindings / nixl_cu13._bindings exceptions
    # (docs/formats/NIXL.md, "Python binding lines and exceptions")
    ("nixl_error", r"_bindings\.nixl\w+Error|\bnixl[A-Z]\w*Error: NIXL_"),
    ("watchdog_timeout", r"[Ww]atchdog timeout"),
    ("health_check_failed", r"Health check failed"),
    (
        "collective_timeout",
        r"Watchdog caught collective operation timeout|timed out after [0-9]+ ?ms|ran for [0-9]+ milliseconds before timing out",
    ),
    (
        "exception",
        r"hit an exception|^Error in request|^Traceback \(most recent call last\)|crashed with exit code|Received sigquit"
        r"|SIGQUIT received|Pyspy|^Exception in |Exception:",
    ),
    ("deferred_release", r"Deferred KV release"),
    ("retract", r"KV cache pool is full\. Retract requests|#retracted_reqs"),
    # decode preallocation found too little KV cache even after evicting (docs/formats/SGLANG.md, "PD transfer and bootstrap failures")
    ("kv_pool_full", r"Eviction insufficient: needed"),
    # a reply for a request the tokenizer already dropped: an abort raced its output (docs/formats/SGLANG.md, "Aborts")
    ("late_output", r"Received output for rid=\S+ but the state was deleted"),
    ("mooncake_error", r"Mooncake Transfer Engine initialization failed"),
    # a request refused before it ran: more tokens than the pool or the model takes (HTTP 400)
    ("request_rejected", r"exceeds the maximum number of tokens|requires too many SWA KV tokens"),
    ("req_time_stats", r"^ReqTimeStats\("),
    ("hicache", r"HiCache|[Hh]icache|hierarchical KV host pool|Finished backup request"),
    # a notification payload {room}_kv_{chunk}_{is_last}[_{rank}], {room}_aux, {room}_state_..., {room}_stg_...
    # with an optional nixlv2_<gen>_ prefix (docs/formats/NIXL.md, "Notification strings"); only DEBUG
    # logging prints them
    (
        "transfer_notif",
        r"(?:^|[\s'\"=:(\[])(?:nixlv2_[0-9]+_)?[0-9]{1,19}_(?:kv_[0-9]+_(?:[01]|True|False)|aux\b|aux_nokv_|state_[0-9]|stg_[0-9])",
    ),
    # prefill learned the decode destination of a room (NIXL debug lines; docs/formats/SGLANG.md,
    # "NIXL connector lines")
    ("bootstrapped", r"room=[0-9]+ is bootstrapped|got info room=[0-9]+"),
    ("nixl", r"NIXL|[Nn]ixl|FakeKVSender|KVManager"),
    ("bootstrap", r"[Bb]ootstrap|boostrap|Register KVArgs|dp_rank=[0-9]+ for bootstrap_room"),
    ("warmup", r"[Ww]armup"),
    ("shutdown", r"SIGTERM received|Gracefully exiting|Schedulers still alive|Shutting down"),
    (
        "startup",
        r"max_total_num_tokens=|fired up and ready|Started server process|Uvicorn running|Application startup"
        r"|Waiting for application startup|server_args=|Load weight|Capture cuda graph|Init torch distributed",
    ),
]
# Messages that carry no prefix but are still unmistakably sglang / NIXL binding output
# (logs copied out of a UI, prints of the NIXL python binding): docs/formats/SGLANG.md,
# "NIXL connector lines"; docs/formats/NIXL.md, "Python binding lines and exceptions".
RE_BARE_KNOWN = (
    r"^(?:Prefill transfer failed|Decode transfer failed|Unexpected transfer worker error|Prefill bootstrap failed"
    r"|Decode handshake failed|Context corruption detected|KV checksum mismatch|NIXL transfer encountered ERR"
    r"|Scheduler hit an exception|Received sigquit|Health check failed|Lost connection with prefill"
    r"|Backend \w+ was instantiated|Initialized NIXL agent|Loaded plugin|Created NIXL agent|NIXL "
    r"|(?:\[gpu=[0-9]+\] )?(?:Prefill|Decode|new fill) batch[., ]|Receive: |Finish: |Abort |Request [0-9]+ timed out"
    # NIXL python logger from 0.6.0: `<date> <time> NIXL <LEVEL> <file>.py:<line> <msg>`
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)? NIXL +[A-Z]+ +\S+\.py:[0-9]+ "
    # sglang NIXL connector lines copied without their prefix (docs/formats/NIXL.md, "Failure and abort texts")
    r"|Received abort notification for room|Sent abort notification for room|Reconnected NIXL peer"
    r"|Register KVArgs from|got info room=|room=[0-9]+ is bootstrapped|sending kvcache to|KVSender "
    r"|Transfer for room [0-9]+ failed|Failed to (?:send|notify|read NIXL)"
    rf"|{RE_PD_TIMEOUT})"
)
# the NIXL python binding's own lines, bare
RE_NIXL_BINDING = r"^(?:Backend \w+ was instantiated|Initialized NIXL agent|Created NIXL agent|Loaded plugin)"
FAMILIES: list[tuple[str, str]] = [
    ("sglang", RE_SGLANG),
    ("sglang_custom", RE_SGLANG_CUSTOM),
    ("uvicorn", RE_UVICORN_LEVEL),
    ("glog", RE_GLOG),
    ("ucx", RE_UCX),
    ("c10d", RE_C10D),
    ("nccl", RE_NCCL),
    ("router", RE_ROUTER),
    ("vllm", RE_VLLM),
    ("trtllm", RE_TRTLLM),
    ("trtllm_cpp", RE_TRTLLM_CPP),
    ("dynamo", RE_DYNAMO),
    ("crash", RE_CRASH),
    ("glog_notice", RE_GLOG_NOTICE),
    ("bare", RE_BARE_KNOWN),
]

FAILURE_KINDS = (
    "transfer_failed",
    "bootstrap_failed",
    "abort",
    "corruption_detected",
    "checksum_mismatch",
    "watchdog_timeout",
    "health_check_failed",
    "collective_timeout",
    "exception",
    "nixl_error",
    "ucx_error",
    "mooncake_error",
    "crash",
    "router_failure",
)
# Kinds that say requests or a host are in trouble without being a failure of their own: their
# lines get a reason too
WARNING_KINDS = (
    "pd_timeout",
    "transport_warning",
    "heartbeat_failed",
    "peer_disconnect",
    "deferred_release",
    "retract",
    "kv_pool_full",
    "late_output",
    "request_rejected",
    "hang_dump",
)
SEVERITY_BY_KIND = {
    "transfer_failed": "error",
    "bootstrap_failed": "error",
    "corruption_detected": "error",
    "checksum_mismatch": "error",
    "watchdog_timeout": "fatal",
    "health_check_failed": "error",
    "collective_timeout": "error",
    "exception": "error",
    "abort": "warning",
    "deferred_release": "warning",
    "retract": "warning",
    "pd_timeout": "warning",
    "heartbeat_failed": "warning",
    "peer_disconnect": "warning",
    "transport_warning": "warning",
    "kv_pool_full": "warning",
    "late_output": "warning",
    "request_rejected": "error",
    "mooncake_error": "error",
    "crash": "fatal",
    "router_failure": "error",
    "hang_dump": "warning",
}
# Normalised failure reasons (docs/formats/SGLANG.md, "Failure reasons"); matched against the
# KVTransferError text if any.
REASON_RULES: list[tuple[str, str]] = [
    # the router's words first: its message quotes the server's answer, which names no cause
    *((reason, f"^(?:{p})") for reason, p in ROUTER_FAILURES),
    (
        "waiting_timeout",
        rf"KVPoll\.WaitingForInput|waiting_timeout|Timed out waiting for prefill completion|^{PD_WAITING_TIMEOUT}"
        r"|generation request \S+ due to KV cache transfer timeout",
    ),
    # TensorRT-LLM's context (prefill) side gave up on a transfer that did not end in time
    (
        "transfer_timeout",
        r"context request \S+ due to KV cache transfer timeout|timed out waiting for context KV cache",
    ),
    ("bootstrap_timeout", rf"KVPoll\.Bootstrapping|^{PD_BOOTSTRAP_TIMEOUT}"),
    ("aborted", r"Aborted by|^Abort|[Aa]bort notification|ABORT"),
    ("request_timeout", r"Request (?:waiting|running) timeout reached"),
    (
        "node_failure",
        r"Lost connection with prefill|healthy before, but now it is down|node failure|might be dead|could be dead"
        r"|is not alive|bootstrap_thread died",
    ),
    ("room_conflict", r"Duplicate (?:or cancelled|decode) bootstrap room|follow_bootstrap_room conflict"),
    ("heartbeat", r"^Attempting to reconnect to "),
    ("kv_pool_full", r"KV cache pool is full|#retracted_reqs|Eviction insufficient"),
    # the prefill side freed a request's KV that decode never read in time (SGLang's deferred
    # release; vLLM's NIXL and Mooncake connectors)
    (
        "release_timeout",
        r"Deferred KV release for room [0-9]+ timed out|^Releasing expired KV blocks|seconds without being sent",
    ),
    ("state_deleted", r"but the state was deleted|KV blocks for unrecognized request"),
    ("too_long", r"exceeds the maximum number of tokens|requires too many SWA KV tokens"),
    ("engine_init", r"Transfer Engine initialization failed"),
    # UCX's and NIXL's own words for a lost or refused peer: the transport, not the bootstrap
    # server (Python's `Connection reset by peer` stays bootstrap_unreachable below)
    (
        "transport",
        r"[Cc]onnection reset by remote peer|Endpoint timeout|Destination is unreachable|[Tt]ransport retry count"
        r"|UCS_ERR_[A-Z_]+|Remote I/O error",
    ),
    (
        "config",
        r"policy mismatch|does NOT support|layout mismatch|out of range|compatibility hash mismatch"
        r"|engine ID mismatch|NixlHandshakePayload",
    ),
    # the bootstrap server did not answer at all (a prefill that is down or not yet up): before
    # bootstrap_info, which is the same fetch answered wrongly
    (
        "bootstrap_unreachable",
        r"Connection refused|Connection reset|Connection aborted|RemoteDisconnected|Max retries exceeded"
        r"|NewConnectionError|ConnectTimeout|Failed to establish a new connection|Name or service not known"
        r"|No route to host",
    ),
    # a prefill that could not register with its bootstrap server: decode cannot find it
    (
        "bootstrap_register",
        r"failed to register to bootstrap|register attempt [0-9]+/[0-9]+ failed|Failed to register prefill",
    ),
    (
        "bootstrap_info",
        r"Could not fetch|Failed to get prefill server info|Error fetching prefill|to prefill \S+ failed"
        # vLLM's side-channel handshake with the prefill instance (its metadata, as SGLang's bootstrap info)
        r"|^Handshake failed for request|^Handshake with \S+ failed|Mooncake handshake",
    ),
    ("metadata_corruption", r"Context corruption detected|Metadata unexpectedly|Metadata corruption"),
    ("checksum_mismatch", r"[Cc]hecksum mismatch"),
    # crashes by signal: the launcher's exit code (128 + signal) or the dump's own words
    ("sigquit", r"exit code 131\b|Caught signal 3 \("),
    # std::terminate on an uncaught C++ exception (c10::Error from a watchdog) aborts the process
    ("sigabrt", r"exit code 134\b|Caught signal 6 \(|^Fatal Python error: Aborted|^terminate called after throwing"),
    ("sigsegv", r"exit code 139\b|Caught signal 11 \(|Segfault encountered|^Fatal Python error: Segmentation fault"),
    (
        "remote_disconnect",
        r"NIXL_ERR_REMOTE_DISCONNECT|RemoteDisconnect|remote agent \S+ was disconnected|NIXL peer \S+ disconnected"
        r"|NIXL invalidated remote agent",
    ),
    ("transport", r"NIXL|UCX|Work Request Flushed|KVSender|[Ss]ession \S+ (?:failed|is not alive)|Failed to send"),
    ("unknown_rank", r"unknown reason from another rank"),
    ("collective_timeout", r"timed out after [0-9]+ ?ms|collective operation timeout|milliseconds before timing out"),
    ("watchdog", r"[Ww]atchdog"),
    ("health_check", rf"Health check failed|{RE_ROUTER_HEALTH}"),
    (
        "transfer_error",
        r"KV transfer failed|Room marked Failed|transfer failed|KVTransferError|occurred during (?:context|generation) transfer"
        r"|unexpected status for request|during tranfering kvcache",
    ),
]

# --- identifiers and fields of event lines ("Identifiers: rid and bootstrap room") -------------
RID_PATTERNS = [
    r"rid='([^']*)'",
    r'"rid": ?"([^"]*)"',
    r"\brid=([^\s,)'\]]+)",
    r"'id': '([^']*)'",
    r"Request ([0-9a-fA-F-]{16,}) \(bootstrap_room",
    r"\breq=([^\s,]+)",
    r"^Req (\S+) ",
    r"^Request (\S+) exceeds",
    r"[Rr]equest (\S+), bootstrap_room",
]
ROOM_PATTERNS = [
    r"bootstrap_room[=:] ?'?([0-9]+)",
    r'"bootstrap_room": ?"?([0-9]+)',
    r"\broom[= ]([0-9]+)",
    r"for room ([0-9]+)",
    r"^Request ([0-9]{1,19}) (?:timed out|waiting_timeout)",
    r"\(bootstrap_room: ([0-9]+)\)",
    r"bootstrap_room ([0-9]+)",
    r"(?:^|[\s'\"=:(\[])(?:nixlv2_[0-9]+_)?([0-9]{1,19})_(?:kv|aux|state|stg)(?:_|\b)",
]
# Literals a family's patterns need: a line with none of them cannot match any of them, so only
# the lines with one run the family's regexes (and the native scanner leaves those lines to it).
RID_LITERALS = ("rid", "'id': '", "equest ", "req=", "Req ")
ROOM_LITERALS = ("room", "Request ", "_kv", "_aux", "_state", "_stg")
REQUEST_FIELD_LITERALS = ("finish_reason", "_tokens", "e2e_latency", "status_code")
RANK_LITERAL = "rank="
# a peer address: (literal, a digit must follow)
PEER_LITERALS = (("to ", True), ("from ", True), ("bootstrap_addr: ", False))
PRE_RID = alt(RID_LITERALS)
PRE_ROOM = alt(ROOM_LITERALS)
PRE_REQ = alt(REQUEST_FIELD_LITERALS)
PRE_PEER = "|".join(lit(x) + ("[0-9]" if digit else "") for x, digit in PEER_LITERALS)
RE_ACCESS = r'(?:^INFO:\s+)?(\S+?)(?: - \S+)? (?:- )?(?:\[[^\]]+\] )?"(\S+) (\S+) [^"]*" ([0-9]{3})'
# a KVTransferError says why after the room it names ("Failure reasons"): in a line's message, and in
# the traceback a record ends in where its head (`Scheduler hit an exception: ...`) names neither
RE_KVT_ERROR = r"KVTransferError\(bootstrap_room=[0-9]+\): (.*)$"
RE_TB_KVT_REASON = r"KVTransferError\(bootstrap_room=[0-9]+\): ([^\n]*)"
TB_KVT_ROOM_LITERAL = "KVTransferError(bootstrap_room="
RE_TB_KVT_ROOM = r"KVTransferError\(bootstrap_room=([0-9]+)\)"
# a line that reports a caught exception names the reason after these words, not at its start
RE_EXCEPTION_REASON = r"with exception (.*)$"

# --- fields of event lines beyond the identifiers --------------------------------------------
# Access lines ("Uvicorn and access lines"): uvicorn's `INFO:     peer - "..."`, and the Common Log
# Format of aiohttp's bootstrap and metadata servers: either makes a line http_access, whose fields
# RE_ACCESS then reads
RE_UVICORN_ACCESS_LINE = r'^INFO:\s+\S+ - "'
RE_CLF_ACCESS_LINE = r'^\S+ (?:- \S+ )?\[[^\]]+\] "\S+ \S+ HTTP'
# a uvicorn level word on a line without a newline: the word, its colon and a space decide, where
# RE_UVICORN_LEVEL's `(.*)$` would scan the whole line
RE_UVICORN_LEVEL_WORD = r"^(INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s"
# a glog line's source file tells which transfer library wrote it, when its text does not
# (docs/formats/NIXL.md, "Abseil log lines")
GLOG_FILE_NIXL = r"(?i)nixl|ucx"
GLOG_FILE_MOONCAKE = r"(?i)transfer_engine|mooncake|rdma|transport"
# a c10d or NCCL line about a collective that timed out ("Timeouts"), whatever its level
RE_COLLECTIVE_TIMEOUT = r"timed out after|collective operation timeout|before timing out|[Tt]imeout"
# The fields a request log reads out of its `out` literal, never evaluated ("Request logs"): each
# on its own, so a record cut by level-2 truncation still gives what it kept. (column, pattern,
# dtype); `_status` is the abort's status_code, one of the http_status candidates
REQUEST_FIELDS: list[tuple[str, str, str]] = [
    ("finish_reason", r"""['"]finish_reason['"]: \{['"]type['"]: ['"](\w+)""", "str"),
    ("prompt_tokens", r"""['"]prompt_tokens['"]: ([0-9]+)""", "int"),
    ("completion_tokens", r"""['"]completion_tokens['"]: ([0-9]+)""", "int"),
    ("cached_tokens", r"""['"]cached_tokens['"]: ([0-9]+)""", "int"),
    ("e2e_latency", r"""['"]e2e_latency['"]: ([0-9.]+)""", "float"),
    ("_status", r"""['"]status_code['"]: ([0-9]{3})""", "str"),
]
# the JSON request log's inner local time in microseconds, finer than the prefix's second
JSON_TS_LEAD = '{"timestamp"'
RE_JSON_TS = r'^\{"timestamp": ?"([^"]+)"'
# The peer of a PD line: an address after `to`/`from`, else the bootstrap address a failure names
# (PEER_LITERALS gate them); first match wins
PEER_PATTERNS = [
    r"(?:to|from) ([0-9]{1,3}(?:\.[0-9]{1,3}){3}:[0-9]+)",
    r"bootstrap_addr: ([^)\s,]+)",
]
# a line's `rank=N` where no rank tag gave one; `\b` leaves out request logs' `dp_rank=None` and friends
RE_RANK = r"\brank=([0-9]+)"
# The sgl-router's fields (docs/formats/OTHER_ENGINES.md, "sgl-router"): its request is the span's
# Debug-quoted `request_id`, the router's own id; the status is the message's `status=`, else the
# span's `status_code=` (a (column, pattern) table, first match wins); the peer is the server that
# answered, `decode_url=http://h:p`, or the worker a health check names
SPAN_RID_LITERAL = "request_id="
RE_SPAN_RID = r'\brequest_id="?([^"\s,}]+)'
ROUTER_STATUS: list[tuple[str, str]] = [
    ("message", r"\bstatus(?:_code)?=([0-9]{3})\b"),
    ("span", r"\bstatus_code=([0-9]{3})\b"),
]
ROUTER_PEER_PATTERNS = [
    r"\b(?:decode|prefill|worker)_url=([^\s,]+)",
    r"\b[Ww]orker (https?://[^\s,]+)",
]

# --- stats lines: known keys -> columns ("Stats lines", "Renamed stats fields") ----------------
GRAPH_BACKENDS = ("cuda", "cpu", "npu", "musa")
# (column, raw keys, side or None, dtype); the `_` keys are the May 2024 wording, where
# `#remaining_req` is what is left in the waiting queue after the batch (later `#queue-req`)
# and `tree_cache_hit_rate` the later `cache hit rate`
STATS_KEYS: list[tuple[str, tuple[str, ...], str | None, str]] = [
    ("new_seq", ("#new-seq", "#seq"), None, "int"),
    ("new_token", ("#new-token", "#new_token"), None, "int"),
    ("cached_token", ("#cached-token", "#cached_token"), None, "int"),
    ("cache_hit_rate", ("cache hit rate", "tree_cache_hit_rate"), None, "pct"),
    ("token_usage", ("token usage", "full token usage"), None, "float"),
    ("num_token", ("#token", "#full token"), None, "int"),
    ("running_req", ("#running-req", "#running_req"), None, "int"),
    ("queue_req", ("#queue-req", "#remaining_req"), None, "int"),
    ("pending_token", ("#pending-token",), None, "int"),
    ("bootstrap_req", ("#unbootstrapped-req", "#prealloc-req", "#bootstrap-req"), "prefill", "int"),
    ("inflight_req", ("#transferring-req", "#inflight-req"), "prefill", "int"),
    ("optimistic_req", ("#optimistic-req",), None, "int"),
    ("prealloc_req", ("#prealloc-req",), "decode", "int"),
    ("transfer_req", ("#transfer-req",), "decode", "int"),
    ("retracted_req", ("#retracted-req",), None, "int"),
    ("host_receive_req", ("#host-receive-req",), None, "int"),
    ("prealloc_usage", ("pre-allocated usage",), None, "float"),
    ("gen_throughput", ("gen throughput (token/s)",), None, "float"),
    ("input_throughput", ("input throughput (token/s)",), None, "float"),
    ("cuda_graph", tuple(f"{b} graph" for b in GRAPH_BACKENDS), None, "bool"),
    ("accept_len", ("accept len",), None, "float"),
    ("accept_rate", ("accept rate",), None, "float"),
]
KNOWN_STATS_KEYS = sorted({k for _, keys, _, _ in STATS_KEYS for k in keys})
RE_GRAPH = rf"({'|'.join(GRAPH_BACKENDS)}) graph"

ROLE_PREFILL = (
    r"#unbootstrapped-req|#transferring-req|#bootstrap-req|#inflight-req|Prefill transfer failed"
    r"|Prefill bootstrap failed|FakeKVSender|Registered Prefill|Prefill batch[.,].*#prealloc-req"
)
ROLE_DECODE = (
    r"pre-allocated usage|#transfer-req|Decode transfer failed|Decode handshake failed|Context corruption detected"
)
# a line of the sgl-router (sgl-model-gateway after the rename) by its tracing target, spans or not
ROLE_ROUTER = r"(?m) (?:TRACE|DEBUG|INFO|WARN|ERROR) (?:\S+: )?(?:sglang_router_rs|smg)(?:::\w+)*: "
