"""The deployment the incident happens to: hosts, addresses, parallelism, timeouts, wedge kinds."""

from __future__ import annotations

import datetime as dt

UTC = dt.timezone.utc
PREFILL = "node-p0"
DECODES = ("node-d0", "node-d1")
HOST_IP = {
    "node-p0": "10.0.1.10",
    "node-d0": "10.0.2.20",
    "node-d1": "10.0.2.21",
    "router": "10.0.0.5",
    "probe": "10.0.0.1",
}
PREFILL_TP = 4
DECODE_DP = 4
WAIT_TIMEOUT = 300.0
WEDGE_KINDS = ("health_503", "tp_desync", "dead_bootstrap_thread")
MODEL = "deepseek-v3.2"
