"""Masking for reports that go into public issues: secrets, IP addresses and host names.

The same name always gets the same mask within one report (`host-2` is the same machine in every
table), so the evidence still reads.
"""

from __future__ import annotations

import re

import polars as pl

SECRET = re.compile(
    r"(?i)(?:bearer\s+[A-Za-z0-9._~+/=-]{8,}|\bsk-[A-Za-z0-9_-]{12,}|\b(?:api[_-]?key|token|secret|password)"
    r"([\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}|\bhf_[A-Za-z0-9]{16,}|\bAKIA[0-9A-Z]{16}\b)"
)
IPV4 = re.compile(r"\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b")


class Redactor:
    def __init__(self, hosts: list[str]):
        # longest first, so that `decode-10` is not masked as `decode-1` + `0`
        self.hosts = {h: f"host-{i + 1}" for i, h in enumerate(sorted({h for h in hosts if h and len(h) > 2}))}
        self._host_re = (re.compile("|".join(re.escape(h) for h in sorted(self.hosts, key=len, reverse=True)))
                         if self.hosts else None)
        self.ips: dict[str, str] = {}

    @classmethod
    def for_store(cls, store) -> "Redactor":
        from forensics.catalog.sql import run_sql

        names = run_sql(store, "SELECT DISTINCT host FROM files WHERE host IS NOT NULL "
                               "UNION SELECT DISTINCT host FROM events WHERE host IS NOT NULL")
        return cls(names["host"].to_list())

    def text(self, s: str) -> str:
        s = SECRET.sub(lambda m: "[secret]", s)
        s = IPV4.sub(lambda m: self.ips.setdefault(m.group(), f"ip-{len(self.ips) + 1}"), s)
        if self._host_re:
            s = self._host_re.sub(lambda m: self.hosts[m.group()], s)
        return s

    def value(self, v):
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {self.value(k) if isinstance(k, str) else k: self.value(x) for k, x in v.items()}
        if isinstance(v, pl.DataFrame):
            return self.frame(v)
        return v

    def frame(self, df: pl.DataFrame) -> pl.DataFrame:
        if df.height == 0:
            return df
        rows = [{k: self.value(x) for k, x in r.items()} for r in df.iter_rows(named=True)]
        return pl.DataFrame(rows, schema=df.schema, strict=False)

    def report(self, report: dict) -> dict:
        return {k: self.value(v) for k, v in report.items()}
