"""One request as the incident plans it, and the ids the servers and opencode give."""

from __future__ import annotations

import dataclasses
import random

# ---------------------------------------------------------------------------------------------
# requests


@dataclasses.dataclass
class Req:
    agent: str  # proxy | claude | opencode | killed
    session: str
    turn: str  # stable id of the reply in its source
    t0: float  # router sent it to both servers
    prompt: int
    completion: int
    cached: int
    dhost: str
    drank: int
    room: int
    rid_p: str
    rid_d: str
    t_boot: float = 0.0  # prefill bootstrapped (left the bootstrap queue)
    t_prefill: float = 0.0  # prefilled
    t_xfer: float = 0.0  # KV landed on decode
    t_end: float = 0.0  # last token / error / abort time
    outcome: str = "ok"  # ok | waiting_timeout | bootstrap_timeout | aborted | transfer_failed
    label: str = "clean"  # clean | hard_negative | corrupted | error | killed
    ckind: str = ""  # corruption kind or hard-negative kind
    heavy: bool = False  # prefill load heavy when it was prefilled
    prank: int = 0
    error_body: str = ""
    stream: bool = False


def hexid(rng: random.Random) -> str:
    return "%032x" % rng.getrandbits(128)


def room_id(rng: random.Random) -> int:
    return rng.randrange(10**18, 2**63)


def oc_id(prefix: str, t: float, rng: random.Random) -> str:
    # opencode ids sort by creation time: a hex time part then a random base62 tail
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return f"{prefix}_{int(t * 1000) * 4096 + rng.randrange(4096):012x}"[:16] + "".join(
        rng.choice(alphabet) for _ in range(14)
    )


def seed_tag(seed: int) -> str:
    return f"{seed:03d}"
