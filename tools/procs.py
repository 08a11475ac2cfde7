"""The live processes of a session, read from /proc: what an interrupted ingest may leave behind."""

from __future__ import annotations

import os
import time


def session(sid: int) -> list[int]:
    """The live (not zombie) processes of session `sid`: an ingest started in a session of its own,
    its fork server and its workers."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # the name may hold spaces and brackets
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            out.append(int(d))
    return out


def wait_gone(sid: int, timeout: float = 30, step: float = 0.005) -> list[int]:
    """The processes of session `sid` still alive after waiting up to `timeout` seconds for them."""
    end = time.monotonic() + timeout
    while (left := session(sid)) and time.monotonic() < end:
        time.sleep(step)
    return left
