"""The simulation's records: an agent session and one request through prefill and decode."""

from __future__ import annotations

# -- simulation records ----------------------------------------------------------------------------


class Session:
    def __init__(self, sid: str, agent: str, source: str | None, worker: int | None, t: float):
        self.sid, self.agent, self.source, self.worker, self.t_start = sid, agent, source, worker, t
        self.reqs: list[Req] = []
        self.ctx = 0
        self.cache_hit = 0
        self.sys_tokens = 0
        self.turns_left = 0
        self.loop_left = 0
        self.loops = 0
        self.lang = "en"
        self.task = ""
        self.forced: str | None = None
        self.retry = False


class Req:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.p_rank = self.d_host = self.d_rank = None
        self.new_tokens = max(1, self.prompt - self.cached)
        self.done = 0
        self.kv_held = 0
        self.units: list[dict] = []
        self.t_prealloc = self.t_boot = self.t_pf_start = self.t_pf_end = None
        self.t_xfer_done = self.t_pf_fin = self.t_kv = self.t_start = self.t_fin = None
        self.t_dq_end = None  # end of decode transfer-queue membership
        self.t_resp = None
        self.segs: list[tuple[float, float]] = []
        self.speed = 0.0
        self.p_out = None  # 'ok' | 'aborted' | 'fail' | 'late_abort'
        self.d_out = (
            None  # 'ok' | 'aborted_transfer' | 'aborted_running' | 'fail' | 'timeout' | 'ctxcorrupt' | 'late_abort'
        )
        self.t_p_end = self.t_d_end = None
        self.t_pabort = self.t_dabort = None
        self.t_fail = None
        self.fail_unit = None
        self.corrupt = None  # (class, subtype)
        self.hard_negative = None
        self.ksum_mismatch = False


def health_req(t: float, p_rid: str | None = None) -> Req:
    """The router's health probe as a request: one token in, one out, no room (`p_rid`: the prefill's rid)."""
    return Req(
        idx=-1,
        kind="health",
        sess=None,
        turn=0,
        t_arr=t,
        prompt=1,
        cached=0,
        completion=1,
        reasoning=0,
        final=True,
        stream=False,
        max_new=1,
        room=0,
        p_rid=p_rid,
        d_rid=None,
        forced=None,
        ksum=None,
        kv_ksum=False,
    )
