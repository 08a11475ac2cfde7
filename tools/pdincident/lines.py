"""Time formatting and the per-host log a line is added to, in the host's own clock."""

from __future__ import annotations

import datetime as dt

from tools.pdincident.scenario import UTC

# ---------------------------------------------------------------------------------------------
# time and line rendering


def fmt_prefix(t: float, tags: str = "") -> str:
    d = dt.datetime.fromtimestamp(t, UTC)
    return f"[{d:%Y-%m-%d %H:%M:%S}{tags}]"


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def iso_ms(t: float) -> str:
    return dt.datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


class HostLog:
    """The lines one process tree writes to its log, in true time; rendered with the host's clock."""

    def __init__(self, host: str, skew: float):
        self.host = host
        self.skew = skew
        self.lines: list[tuple[float, int, str]] = []
        self._n = 0

    def add(self, t: float, text: str, tags: str = "") -> None:
        """An sglang / uvicorn line: the prefix is written from the host's clock."""
        self._n += 1
        self.lines.append((t, self._n, ("S", tags, text)))

    def raw(self, t: float, render) -> None:
        """A foreign line (abseil, UCX, NIXL binding, traceback frame): render(host_time) gives the text."""
        self._n += 1
        self.lines.append((t, self._n, ("R", render, None)))

    def render(self) -> list[tuple[float, str]]:
        out = []
        for t, _, (k, a, b) in sorted(self.lines, key=lambda x: (x[0], x[1])):
            ht = t + self.skew
            out.append((ht, f"{fmt_prefix(ht, a)} {b}" if k == "S" else a(ht)))
        return out


def abseil(sev: str, ht: float, tid: int, src: str, msg: str) -> str:
    d = dt.datetime.fromtimestamp(ht, UTC)
    return f"{sev}{d:%m%d %H:%M:%S}.{d.microsecond:06d} {tid:>7d} {src}] {msg}"


def access(ip: str, port: int, method: str, path: str, status: int) -> str:
    reason = {200: "OK", 500: "Internal Server Error", 503: "Service Unavailable", 404: "Not Found"}[status]
    return f'INFO:     {ip}:{port} - "{method} {path} HTTP/1.1" {status} {reason}'
