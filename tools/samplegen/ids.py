"""Time formatting and the ids each source writes (uuid4, opencode's ascending ids)."""

from __future__ import annotations

import datetime as dt
import random

from tools.samplegen.scenario import UTC

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
