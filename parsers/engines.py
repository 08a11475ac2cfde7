"""Other engines' lines, as data: which program wrote an input's lines that the server-log grammar
does not read (vLLM, TensorRT-LLM, Dynamo, sgl-router, LMCache), told from their timestamp
prefixes and logger names. Nothing here parses those lines: it names their writer, so that the
reports say whose lines went unread (docs/formats/OTHER_ENGINES.md, "Telling the writer of a line").
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True)
class Engine:
    name: str  # the key reports and JSON carry
    label: str  # what a person calls it
    shapes: tuple[re.Pattern, ...]  # a line of its own, from the line's start (after any wrapper)
    markers: tuple[str, ...] = ()  # text that one line alone decides by
    read: str = "not read beyond plain lines"  # what this project reads of it
    # shapes tried after every engine's own: a wrapper of the engine's that may hold another's line
    fallback: tuple[re.Pattern, ...] = ()
    # what the server-log parser reads of its lines, when it reads them as the engine's own (the
    # events' `source`); empty: its lines are named, not read
    read_lines: str = ""


def _re(*patterns: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p) for p in patterns)


_PY_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_RUST_LEVEL = r"(?:TRACE|DEBUG|INFO|WARN|ERROR)"
# vLLM's process prefix (`_add_prefix`): `(EngineCore_DP0 pid=2211) `, `(Worker_TP1 pid=9) `, Ray's `, ip=`
_VLLM_PROC = r"\((?:EngineCore|APIServer|VllmWorker|Worker|RayWorkerWrapper|VllmWorkerProcess)[\w]*(?: rank=\d+)? pid=\d+(?:, ip=[\d.]+)?\) "

_READ_LINES = "times, levels, {what}"
# of an engine whose logger's lines are read: the lines named from the unparsed ones are the others
_NOT_READ = "lines outside its logger's format not read"

ENGINES: tuple[Engine, ...] = (
    Engine(
        "vllm",
        "vLLM",
        _re(
            # `INFO 09-17 16:23:13 [core.py:123] ` (2025 on) and `INFO 04-01 17:26:35 metrics.py:455] ` (before)
            rf"^(?:\([^()]+? pid=\d+(?:, ip=[\d.]+)?\) )?{_PY_LEVEL} \d\d-\d\d \d\d:\d\d:\d\d \[?[^\s\]]+:\d+\] ",
        ),
        ("vLLM API server version", "EngineCore encountered", "EngineCore failed to start", "EngineDeadError"),
        # any other line under the process prefix: print() output, tracebacks without the logger's head
        fallback=_re(rf"^{_VLLM_PROC}"),
        read=_NOT_READ,
        read_lines=_READ_LINES.format(what="process ranks, tracebacks, NIXL and Mooncake connector failures"),
    ),
    Engine(
        "trtllm",
        "TensorRT-LLM",
        _re(
            r"^(?:\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\] )?\[TRT-LLM\](?: ?\[[^\]]+\])+ ",
            r"^\[TensorRT-LLM\]\[(?:TRACE|DEBUG|INFO|WARNING|ERROR)\]",
        ),
        ("[TensorRT-LLM] TensorRT-LLM version: ",),
        read=_NOT_READ,
        read_lines=_READ_LINES.format(what="ranks, cache transceiver failures and KV transfer timeouts"),
    ),
    Engine(
        "dynamo",
        "Dynamo",
        _re(
            rf"^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{{3,9}})?Z +{_RUST_LEVEL} (?:[A-Za-z_][\w-]*(?::[A-Za-z_][\w-]*)*: )?[\w.]+(?:::[\w.]+)*: ",
            r'^\{"time":"\d{4}-\d\d-\d\dT[^"]*","level":"',
        ),
        ("dynamo_runtime::", "dynamo_llm::", '"target":"dynamo_'),
        read=_NOT_READ,
        read_lines=_READ_LINES.format(what="the KV router's failures naming a request"),
    ),
    Engine(
        "sgl_router",
        "sgl-router",
        _re(
            rf"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{{3}})? +{_RUST_LEVEL} "
            r"(?:[\w-]+(?:\{[^}]*\})?(?::[\w-]+(?:\{[^}]*\})?)*: )?(?:sglang_router_rs|smg)(?:::\w+)*: ",
        ),
        ("Starting router on",),
        # its lines, in a request's span or not, are the grammar's router lines (docs/formats/SGLANG.md,
        # "Foreign lines: NCCL, c10d, glog, UCX, router"): what is left unread of them names the input
        read="read as router events, but for these lines",
    ),
    Engine(
        "lmcache",
        "LMCache",
        _re(
            rf"^\[\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}}\] LMCache {_PY_LEVEL}: ",
            rf"^{_PY_LEVEL} LMCache: ",
        ),
    ),
)
BY_NAME = {e.name: e for e in ENGINES}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# outer wrappers peeled before a line's own head is matched: docker / kubectl timestamps (RFC 3339,
# with CRI's stream and tag), journald, `srun --label`, and vLLM's process prefix (an LMCache line
# printed inside EngineCore)
_WRAPPER = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) (?:(?:stdout|stderr) [FP] )?"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: "
    r"|\s*\d+: "
    rf"|{_VLLM_PROC})"
)

SAMPLE_LINES = 200  # the lines of an input a verdict reads
MIN_LINES = 3  # lines of one engine's shape that name an input (fewer when the input has fewer)


def line_engine(line: str) -> str | None:
    """The engine whose shape the line has, or None."""
    line = _ANSI.sub("", line).rstrip("\r\n")
    tried = [line]
    peeled = _WRAPPER.sub("", line, count=1)
    if peeled != line:
        tried.append(peeled)
    for shapes in ("shapes", "fallback"):
        for e in ENGINES:
            for text in tried:
                if any(p.match(text) for p in getattr(e, shapes)):
                    return e.name
    return None


def marker_engine(line: str) -> str | None:
    for e in ENGINES:
        if any(m in line for m in e.markers):
            return e.name
    return None


def recognise(lines: Iterable[str]) -> str | None:
    """The engine that wrote these lines (an input's first unparsed ones), or None: the engine with most
    lines of its shape, given `MIN_LINES` of them (or all the lines, when fewer), or else a marker line."""
    counts: Counter[str] = Counter()
    marked: list[str] = []
    n = 0
    for n, line in enumerate(lines, 1):
        if n > SAMPLE_LINES:
            n = SAMPLE_LINES
            break
        if e := line_engine(line):
            counts[e] += 1
        if e := marker_engine(line):
            marked.append(e)
    if counts:
        e, c = max(counts.items(), key=lambda kv: (kv[1], -[x.name for x in ENGINES].index(kv[0])))
        if c >= min(MIN_LINES, n):
            return e
    return marked[0] if marked else None


def describe(name: str, unparsed_share: float, read: bool = False) -> str:
    """'vLLM log: not read beyond plain lines; 100% unparsed'; with `read`, what the parser reads of
    the lines it took as the engine's own."""
    e = BY_NAME[name]
    what = f"read as {e.label}'s ({e.read_lines})" if read and e.read_lines else e.read
    return f"{e.label} log: {what}; {percent(unparsed_share)} unparsed"


def read_note(lines: dict[str, int]) -> str:
    """The ingest note on an input's lines read as other engines' own: "vLLM log: 12 records read as
    vLLM's (times, levels, ...)", the engine with most lines first."""
    parts = [
        f"{BY_NAME[name].label} log: {n:,} record{'s' * (n != 1)} read as {BY_NAME[name].label}'s ({BY_NAME[name].read_lines})"
        for name, n in sorted(lines.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return "; ".join(parts)


def percent(share: float) -> str:
    """A share as a person reads it: 100%, 63%, 0.4%, never 100% for less than all."""
    p = 100 * share
    if 99.5 <= p < 100:
        return f"{math.floor(p * 10) / 10:.1f}%"
    return f"{p:.0f}%" if p >= 10 or p == 0 else f"{p:.1f}%"
