"""The deployment, the incident's timeline and the line kinds planted.json counts."""

from __future__ import annotations

import datetime as dt

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
