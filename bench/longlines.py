"""Peak memory of `forensics ingest` on inputs whose longest line is huge, beside `wc -l`.

    python bench/longlines.py                  # the three cases, median of 3 runs each
    python bench/longlines.py --runs 1 --case proxy_reply_50mb
    python bench/longlines.py --python /tmp/before/venv/bin/python   # another build, for before/after

Cases (generated in a temporary folder, deleted afterwards):
  nul_line_1gib      a server log with a 1 GiB run of NULs on one line between good lines
  long_line_200mb    a server log with one 200 MB line of text between good lines
  proxy_reply_50mb   an OpenAI-compatible proxy log whose one response body holds a 50 MB reply

Each run is a whole `forensics ingest` process into a fresh store; peak RSS is the largest
resident set of that process or any child (wait4 rusage, as `/usr/bin/time -v` reports it). The
reference is `wc -l` over the same file in the same run: what merely reading it costs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

GOOD = (
    "[2026-10-30 10:00:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 1000, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0\n"
)


def _good(n: int, start: int = 0) -> bytes:
    return "".join(GOOD.format(s=(start + i) % 60, n=i) for i in range(n)).encode()


def _fill(f, byte: bytes, n: int) -> None:
    chunk = byte * (1 << 20)
    while n > 0:
        f.write(chunk[:n])
        n -= len(chunk)


def nul_line_1gib(d: str) -> str:
    path = os.path.join(d, "decode-0", "decode.log")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(_good(1000))
        _fill(f, b"\0", 1 << 30)
        f.write(b"\n" + _good(1000, 20))
    return path


def long_line_200mb(d: str) -> str:
    path = os.path.join(d, "decode-0", "decode.log")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(_good(1000))
        f.write(b"[2026-10-30 10:00:10 DP0 TP0] Receive: obj=")
        _fill(f, b"x", 200_000_000)
        f.write(b"\n" + _good(1000, 20))
    return path


def proxy_reply_50mb(d: str) -> str:
    path = os.path.join(d, "proxy", "proxy.jsonl")
    os.makedirs(os.path.dirname(path))
    req = {
        "ts": "2026-10-30T10:00:00.004Z",
        "dir": "req",
        "conn": "c-1",
        "body": {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]},
    }
    with open(path, "w") as f:
        for i in range(200):
            f.write(json.dumps({**req, "conn": f"c-{i}"}) + "\n")
            f.write(
                json.dumps(
                    {
                        "ts": "2026-10-30T10:00:01.000Z",
                        "dir": "resp",
                        "conn": f"c-{i}",
                        "status": 200,
                        "body": {
                            "id": f"r{i}",
                            "object": "chat.completion",
                            "choices": [
                                {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
                            ],
                        },
                    }
                )
                + "\n"
            )
        f.write(json.dumps({**req, "conn": "c-big"}) + "\n")
        f.write(
            '{"ts":"2026-10-30T10:00:02.000Z","dir":"resp","conn":"c-big","status":200,"body":{"id":"big",'
            '"object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":'
            '{"role":"assistant","content":"'
        )
        f.write("lorem ipsum " * (50_000_000 // 12))
        f.write('"}}]}}\n')
    return path


CASES = {"nul_line_1gib": nul_line_1gib, "long_line_200mb": long_line_200mb, "proxy_reply_50mb": proxy_reply_50mb}


def _run(cmd: list[str], cwd: str) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB of the process tree's largest member, exit code)."""
    t = time.perf_counter()
    # run from the scratch folder: `python -c` puts the working directory first on sys.path, and a
    # checkout's own forensics/ there would shadow the build given by --python
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="run only this case (repeatable)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose forensics is measured")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    args = ap.parse_args()
    print(f"{'case':<18} {'wc -l MiB':>10} {'ingest MiB':>11} {'ingest s':>9} {'exit':>5}  (median of {args.runs})")
    for name in args.case or list(CASES):
        d = tempfile.mkdtemp(prefix=f"longlines-{name}-", dir=args.tmp)
        try:
            path = CASES[name](d)
            ref, rss, secs, codes = [], [], [], []
            for i in range(args.runs):
                ref.append(_run(["wc", "-l", path], d)[1])
                store = os.path.join(d, f"store{i}")
                s, m, code = _run(
                    [
                        args.python,
                        "-c",
                        "from forensics.cli import main; main()",
                        "ingest",
                        os.path.dirname(path),
                        "--store",
                        store,
                    ],
                    d,
                )
                rss.append(m)
                secs.append(s)
                codes.append(code)
                shutil.rmtree(store, ignore_errors=True)
            print(
                f"{name:<18} {statistics.median(ref):>10.0f} {statistics.median(rss):>11.0f} "
                f"{statistics.median(secs):>9.1f} {','.join(map(str, sorted(set(codes)))):>5}",
                flush=True,
            )
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
