"""truth.json: what was planted, written outside the dump."""

from __future__ import annotations

from tools.pdincident.lines import iso
from tools.pdincident.scenario import PREFILL


class _Truth:
    """Incident's truth (a mixin)."""

    # --- truth ----------------------------------------------------------------------------------
    def make_truth(self) -> dict:
        T = self.T
        stuck = [r for r in self.reqs if r.outcome in ("waiting_timeout", "bootstrap_timeout")]
        if self.wedge_kind == "dead_bootstrap_thread":
            w_end = min(r.t_end for r in stuck)
            last_progress = max(x for x in self.prefill_ticks if x < self.wedge_start)
        else:
            w_end = self.wedge_end
            last_progress = max(x for x in self.decode_progress if x < self.wedge_start)
        in_flight = [
            r
            for r in self.reqs
            if r.t0 <= self.wedge_start < r.t_end
            and (r.dhost == self.wedge_host if self.wedge_host != PREFILL else True)
        ]
        killed = self.killed
        ab_true = [r.t_end for r in killed] + [r.t_prefill_abort for r in killed if getattr(r, "prefill_abort", False)]
        per_host = {}
        for r in killed:
            per_host[r.dhost] = per_host.get(r.dhost, 0) + 1
        per_host[PREFILL] = sum(1 for r in killed if getattr(r, "prefill_abort", False))
        replies = [r for r in self.reqs if r.agent in ("proxy", "claude", "opencode")]

        def ident(r):
            return {
                "source": {"proxy": "openai_proxy", "claude": "claude_code", "opencode": "opencode"}.get(
                    r.agent, "opencode"
                ),
                "session_id": r.session,
                "turn_id": r.turn,
                "rid": r.rid_d if r.agent == "proxy" else None,
            }

        heavy = [r for r in replies if r.label != "error" and r.heavy]
        light = [r for r in replies if r.label != "error" and not r.heavy]
        return {
            "seed": self.seed,
            "dump": "the folder this file sits beside",
            "time_basis": "true UTC; lines on the skewed host are written skew_s ahead of true time",
            "clock_skew": {"host": self.skew_host, "skew_s": round(self.skew, 3), "offset_set": False},
            "cri_prefixed_host": self.cri_host,
            "transfer_trace": self.with_trace,
            "wedge": {
                "kind": self.wedge_kind,
                "host": self.wedge_host,
                "rank": self.wedge_rank,
                "rank_kind": {
                    "tp_desync": "decode DP/TP rank whose stats stop",
                    "dead_bootstrap_thread": "prefill engine_rank whose bootstrap thread died",
                    "health_503": None,
                }[self.wedge_kind],
                "start": iso(T(last_progress)),
                "end": iso(T(w_end)),
                "start_is": "last scheduler progress (stats line) of the wedged host/rank",
                "scheduler_stopped": iso(T(self.wedge_start)),
                "end_is": "the mass timeout that ended it (decode WaitingForInput sweep; for the dead thread the first "
                "KVPoll.Bootstrapping timeout), progress resumes within seconds",
                "health": {
                    "health_503": "503 on /health, 'Health check failed' every 30 s",
                    "tp_desync": "/health 200 throughout",
                    "dead_bootstrap_thread": "/health 200 throughout",
                }[self.wedge_kind],
                "in_flight_at_start": len(in_flight),
                "stuck_rooms": [str(r.room) for r in stuck],
                "stuck_room_outcome": "bootstrap_timeout"
                if self.wedge_kind == "dead_bootstrap_thread"
                else "waiting_timeout",
                "stuck_room_later_failure": "Failed to get kvcache from prefill instance (decode)"
                if self.wedge_kind == "dead_bootstrap_thread"
                else "bootstrap_timeout on prefill ~2 s later",
            },
            "idle_periods": [{"start": iso(T(self.idle[0])), "end": iso(T(self.idle[1])), "is_wedge": False}],
            "abort_storm": {
                "start": iso(min(ab_true) + self.T0),
                "end": iso(max(ab_true) + self.T0),
                "agent_started": iso(T(self.storm_start)),
                "agent_killed": iso(T(self.storm_kill)),
                "count": len(killed),
                "count_is": "requests aborted (distinct bootstrap rooms); each has one decode abort line "
                "(`Decode transfer failed … Aborted by AbortReq.`) and ~70% a prefill one "
                "(`Prefill bootstrap failed … Aborted by AbortReq.`)",
                "abort_lines": len(killed) + per_host[PREFILL],
                "requests_by_host": per_host,
                "skewed_host": self.skew_host,
                "agent_sessions": [r.session for r in killed],
                "killed_turns": [ident(r) for r in killed],
            },
            "replies": {
                "corrupted": [dict(ident(r), kind=r.ckind, heavy=r.heavy) for r in replies if r.label == "corrupted"],
                "hard_negatives": [dict(ident(r), kind=r.ckind) for r in replies if r.label == "hard_negative"],
                "clean": [ident(r) for r in replies if r.label == "clean"],
                "errors": [
                    dict(
                        ident(r),
                        room=str(r.room),
                        rid_decode=r.rid_d,
                        rid_prefill=r.rid_p,
                        outcome=r.outcome,
                        error=r.error_body,
                    )
                    for r in replies
                    if r.label == "error"
                ],
            },
            "prefill_load_effect": {
                "heavy_windows": [{"start": iso(T(a)), "end": iso(T(b))} for a, b in self.heavy],
                "heavy_replies": len(heavy),
                "heavy_corrupted": sum(r.label == "corrupted" for r in heavy),
                "light_replies": len(light),
                "light_corrupted": sum(r.label == "corrupted" for r in light),
                "planted_rates": {"heavy": 0.30, "light": 0.025},
                "is": "corruption probability set by the prefill load when the request was prefilled "
                "(#queue-req, #bootstrap-req, #inflight-req, #pending-token high in heavy windows)",
            },
            "line_counts": self.line_counts,
            "truncated_last_line": self.trunc_host,
        }
