"""Text shapes of the lines an SGLang PD deployment logs, shared by the demo and benchmark generators.

tools/samplegen/ (sample_logs/incident) and bench/gen.py (the benchmark's large logs) build their
server-log lines from these functions, so each shape is written once. A function returns one line,
or the message that follows a prefix; its parameters come in the order their values appear in the
text, so a caller that draws them from a random generator in the call draws in the order the
text reads. Changing a shape here changes the committed sample_logs/incident (regenerate it, see
sample_logs/README.md) and the benchmark data. Standard library only.
"""

from __future__ import annotations

HTTP_REASON = {200: "OK", 500: "Internal Server Error", 503: "Service Unavailable"}
CONN_PY = "/sgl-workspace/sglang/python/sglang/srt/disaggregation/nixl/conn.py"
TRACEBACK = "Traceback (most recent call last):"
READY = "The server is fired up and ready to roll!"
ABORTED = "Aborted by AbortReq."
FINISH_STOP = "{'type': 'stop', 'matched': 1}"


# -- prefixes -------------------------------------------------------------------------------------


def sglang(when: str, tags: str, msg: str) -> str:
    """An sglang logger line: `[<date> <time><tags>] <msg>`; `tags` is "" or starts with a space."""
    return f"[{when}{tags}] {msg}"


def dp_tags(rank: int) -> str:
    """The parallelism tags of a scheduler line with DP attention (DP = TP = EP rank)."""
    return f" DP{rank} TP{rank} EP{rank}"


def uvicorn(level: str, msg: str) -> str:
    """A uvicorn message: the level and its colon padded to 9 characters, as uvicorn prints them."""
    return f"{(level + ':'):<9} {msg}"


def cri(stamp: str, stream: str, line: str) -> str:
    """A line as containerd writes it for k8s: `stamp` is the time to nanoseconds, without the Z."""
    return f"{stamp}Z {stream} F {line}"


def glog(sev: str, mmdd: str, hms: str, us: int, tid, file: str, line, msg: str, tid_width: int = 7) -> str:
    """An abseil/glog line of NIXL: `I1120 14:00:00.123456 2411 nixl_agent.cpp:131] msg`.

    Abseil pads the thread id to 7; `tid_width` 0 leaves it unpadded."""
    t = f"{tid:>{tid_width}}" if tid_width else str(tid)
    return f"{sev}{mmdd} {hms}.{us:06d} {t} {file}:{line}] {msg}"


def ucx(
    secs, us: int, host: str, pid: int, thread: int, file: str, line: int, level: str, msg: str, level_width: int = 5
) -> str:
    """A UCX log line: `[<secs>.<us>] [<host>:<pid>:<thread>] <file>:<line> UCX  <level> <msg>`."""
    return f"[{secs}.{us:06d}] [{host}:{pid:<5}:{thread}] {file:>17}:{line:<4} UCX  {level:<{level_width}} {msg}"


def nixl_py(when: str, level: str, file: str, line: int, msg: str) -> str:
    """A line of the NIXL Python API's logger: `<date> <time> NIXL INFO    _api.py:212 msg`."""
    return f"{when} NIXL {level:<7} {file}:{line} {msg}"


# -- startup --------------------------------------------------------------------------------------


def server_args(**fields) -> str:
    """The ServerArgs dump sglang logs first, fields in the order given, values as Python reprs."""
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"


def memory_pool(
    max_total_num_tokens: int,
    chunked_prefill_size: int,
    max_prefill_tokens: int,
    max_running_requests: int,
    context_len: int,
    available_gpu_mem: float,
) -> str:
    return (
        f"max_total_num_tokens={max_total_num_tokens}, chunked_prefill_size={chunked_prefill_size}, "
        f"max_prefill_tokens={max_prefill_tokens}, max_running_requests={max_running_requests}, "
        f"context_len={context_len}, available_gpu_mem={available_gpu_mem:.2f} GB"
    )


def uvicorn_startup(pid: int) -> tuple[str, ...]:
    """The messages uvicorn logs at INFO while it starts, in order."""
    return (
        f"Started server process [{pid}]",
        "Waiting for application startup.",
        "Application startup complete.",
        "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    )


def nixl_backend(name: str) -> str:
    return f"Backend {name} was instantiated"


def nixl_agent(agent: str) -> str:
    return f"Initialized NIXL agent: {agent}"


# -- stats lines ----------------------------------------------------------------------------------


def prefill_batch(
    new_seq: int,
    new_token: int,
    cached_token: int,
    token_usage: float,
    running_req: int,
    queue_req: int,
    pending_token: int,
    bootstrap_req: int,
    inflight_req: int,
    input_throughput: float,
) -> str:
    return (
        f"Prefill batch, #new-seq: {new_seq}, #new-token: {new_token}, #cached-token: {cached_token}, "
        f"token usage: {token_usage:.2f}, #running-req: {running_req}, #queue-req: {queue_req}, "
        f"#pending-token: {pending_token}, #bootstrap-req: {bootstrap_req}, "
        f"#inflight-req: {inflight_req}, cuda graph: False, input throughput (token/s): {input_throughput:.2f}"
    )


def decode_batch(
    running_req: int,
    token: int,
    token_usage: float,
    prealloc_usage: float,
    prealloc_req: int,
    transfer_req: int,
    gen_throughput: float,
    queue_req: int,
) -> str:
    return (
        f"Decode batch, #running-req: {running_req}, #token: {token}, token usage: {token_usage:.2f}, "
        f"pre-allocated usage: {prealloc_usage:.2f}, #prealloc-req: {prealloc_req}, "
        f"#transfer-req: {transfer_req}, #retracted-req: 0, cuda graph: True, "
        f"gen throughput (token/s): {gen_throughput:.2f}, #queue-req: {queue_req}"
    )


# -- request log ----------------------------------------------------------------------------------


def req_input(
    rid: str, sampling_params: str | None, stream: bool, bootstrap_host: str, bootstrap_port, bootstrap_room: int
) -> str:
    """GenerateReqInput as the request log prints it; without `sampling_params` (None) as level 0 does."""
    sp = f"sampling_params={sampling_params}, return_logprob=False, " if sampling_params is not None else ""
    return (
        f"GenerateReqInput(rid='{rid}', {sp}stream={stream}, "
        f"bootstrap_host='{bootstrap_host}', bootstrap_port={bootstrap_port}, bootstrap_room={bootstrap_room}, "
        "bootstrap_pair_key=None, decode_tp_size=None, routed_dp_rank=None, data_parallel_rank=None, "
        "disagg_prefill_dp_rank=None)"
    )


def req_input_brief(rid: str, bootstrap_room: int) -> str:
    return f"GenerateReqInput(rid='{rid}', bootstrap_room={bootstrap_room})"


def receive(obj: str) -> str:
    return f"Receive: obj={obj}"


def finish(obj: str, out: str) -> str:
    return f"Finish: obj={obj}, out={out}"


def meta_info(
    rid: str,
    finish_reason: str,
    prompt_tokens: int,
    reasoning_tokens: int | None,
    completion_tokens: int,
    cached_tokens: int,
    e2e_latency,
) -> str:
    """The `out` of a Finish line; `reasoning_tokens` None leaves that field out.

    `e2e_latency` prints as given: a float in full (its repr), or text already rounded."""
    rt = f"'reasoning_tokens': {reasoning_tokens}, " if reasoning_tokens is not None else ""
    return (
        f"{{'meta_info': {{'id': '{rid}', 'finish_reason': {finish_reason}, 'prompt_tokens': {prompt_tokens}, "
        f"'weight_version': 'default', 'num_retractions': 0, {rt}"
        f"'completion_tokens': {completion_tokens}, 'cached_tokens': {cached_tokens}, 'e2e_latency': {e2e_latency}}}}}"
    )


def finish_length(length: int) -> str:
    return f"{{'type': 'length', 'length': {length}}}"


def finish_abort(message: str, status_code) -> str:
    return f"{{'type': 'abort', 'message': '{message}', 'status_code': {status_code}, 'err_type': None}}"


def access(ip: str, port: int, method: str, path: str, status: int) -> str:
    """A uvicorn access line (after the sglang prefix)."""
    return uvicorn("INFO", f'{ip}:{port} - "{method} {path} HTTP/1.1" {status} {HTTP_REASON[status]}')


# -- transfer failures ----------------------------------------------------------------------------


def kv_transfer_error(room: int, reason: str) -> str:
    return f"KVTransferError(bootstrap_room={room}): {reason}"


def nixl_transfer_err(room: int) -> str:
    return f"NIXL transfer encountered ERR room={room}"


def waiting_timeout(room: int, seconds: float = 300.0) -> str:
    return f"Request {room} timed out after {seconds}s in KVPoll.WaitingForInput"


def bootstrap_timeout(room: int, seconds: float = 300.0) -> str:
    return f"Request {room} timed out after {seconds}s in KVPoll.Bootstrapping"


def bootstrap_failed(rank: int, rid: str, room: int, exception: str) -> str:
    """The prefill scheduler's line for a request that failed in its bootstrap queue."""
    return (
        f"Prefill bootstrap failed for request rank={rank} req.rid='{rid}' req.bootstrap_room={room} "
        f"with exception {exception}"
    )


def health_check_failed(seconds: float, tic: str, last_heartbeat: str) -> str:
    """The HTTP server's error when a /health generate got no detokenizer output in time (HH:MM:SS)."""
    return (
        f"Health check failed. Server couldn't get a response from detokenizer for last {seconds:g} seconds. "
        f"tic start time: {tic}. last_heartbeat time: {last_heartbeat}"
    )


def transfer_failed(side: str, rank: int, rid: str, room: int, exception: str) -> str:
    """`side` is "prefill" or "decode"; the decode side names the request through its DecodeRequest."""
    who = "req" if side == "prefill" else "decode_req.req"
    return (
        f"{side.capitalize()} transfer failed for request rank={rank} {who}.rid='{rid}' "
        f"{who}.bootstrap_room={room} with exception {exception}"
    )


def worker_error(room: int) -> str:
    return f"Unexpected transfer worker error for room {room}"


def frame(path: str, line: int, func: str) -> str:
    """A traceback's `File` line."""
    return f'  File "{path}", line {line}, in {func}'
