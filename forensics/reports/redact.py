"""Masking for reports that go into public issues: secrets, addresses, personal paths and host names.

A command with `--redact` passes its whole result model (frames, dicts, lists, strings, dataclasses)
through one `Redactor` before any renderer sees it, so every format of that output is covered by the
same masking. Identifying names get consistent pseudonyms (`host-2` is the same machine in every
table of one report, `ip-3` the same address), so the evidence still reads; credentials become
`[secret:KIND]` and are never linked to each other.

The secret shapes are those of gitleaks' default rule set (github.com/gitleaks/gitleaks,
cmd/generate/config/rules: github, gitlab, slack, aws, aws_secret, openai, anthropic, huggingface,
gcp, jwt, privatekey, generic-api-key; MIT licence, Copyright (c) 2019 Zachary Rice), chosen over a
hand-written set because its rules are kept current with the providers' token formats and each comes
with true and false positives; they are rewritten for Python's `re` and adapted for masking rather than
finding: lengths are minimums instead of exact counts, and the entropy thresholds and allowlists are
left out, because a redactor should mask a near-miss (a truncated key, a test key of another length)
rather than publish it. Like gitleaks, each rule has keywords that must occur in the text before
its pattern runs, which keeps a pass over a large frame cheap. Addresses, e-mails, domain names, MACs
and home paths are not secrets to gitleaks; their shapes are written here (IPv6 candidates are
checked with the standard library's `ipaddress`).
"""

from __future__ import annotations

import collections
import dataclasses
import ipaddress
import re
from typing import Callable

import polars as pl

from forensics.analysis.models import Counters
from forensics.core.text import EXCERPT_MARK, escape_control
from forensics.reports import redact_rules as rules


class Redactor:
    """Masks one output: the same name gets the same pseudonym wherever it occurs in it."""

    def __init__(self, hosts: list[str] = (), store_paths: list[str] = ()):
        names = sorted({h for h in hosts if h and h.strip()})
        lowered = {h.lower() for h in names}
        prefix = next(
            (p for p in rules.PSEUDONYM_PREFIXES if not any(re.fullmatch(rf"{re.escape(p)}-\d+", h) for h in lowered)),
            "host-name",
        )
        self.hosts: dict[str, str] = {}  # lower-cased name (and its escaped form) -> pseudonym
        for i, h in enumerate(names):
            p = self.hosts.setdefault(h.lower(), f"{prefix}-{i + 1}")
            self.hosts.setdefault(escape_control(h).lower(), p)
        self._pseudonyms = set(self.hosts.values())
        # longest first, so that `decode-12` is never read as `decode-1` followed by `2`
        in_text = sorted((h for h in self.hosts if h not in rules.WORD_HOSTS and len(h) > 1), key=len, reverse=True)
        self._host_re = (
            re.compile(r"(?i)(?<![\w-])(?:" + "|".join(re.escape(h) for h in in_text) + r")(?![\w-])")
            if in_text
            else None
        )
        paths = sorted({p.rstrip("/\\") for p in store_paths if p and len(p.rstrip("/\\")) > 1}, key=len, reverse=True)
        self._store_re = re.compile("|".join(re.escape(p) for p in paths)) if paths else None
        self._names: dict[str, dict[str, str]] = collections.defaultdict(dict)
        self._cache: dict[str, tuple[str, collections.Counter]] = {}
        self.counts: collections.Counter = collections.Counter()
        # a reply's evidence as stored -> what it was cut from (forensics.analysis.detectors.Excerpt)
        self.excerpts: dict[str, object] = {}

    @classmethod
    def for_store(cls, hosts: list[str], root: str) -> "Redactor":
        """A redactor that knows a store's hosts (inputs, events, clock offsets: the session's
        `redaction_names`) and the store's own path."""
        import os

        root = str(root)
        return cls(hosts, [root, os.path.abspath(root), os.path.realpath(root)])

    # -- text ------------------------------------------------------------------------------------

    def _pseudonym(self, kind: str, prefix: str, key: str) -> str:
        table = self._names[kind]
        if key not in table:
            table[key] = f"{prefix}-{len(table) + 1}"
        return table[key]

    def _mask(self, s: str, spans: list[tuple[int, int]] | None = None) -> tuple[str, collections.Counter]:
        """`s` masked, and what was masked by kind. `spans`, when given, is one (start, end) per
        character of `s` in the text it came from, and is kept so as the masks replace characters:
        each character of a mask gets the span of all it replaced (see `_Cut`)."""
        found: collections.Counter = collections.Counter()

        def sub(pattern: re.Pattern, kind: str, repl: Callable[[re.Match], str], text: str) -> str:
            if spans is not None:
                return tracked(pattern, kind, repl, text)

            def counted(m):
                out = repl(m)
                if out != m.group():
                    found[kind] += 1
                return out

            return pattern.sub(counted, text)

        def tracked(pattern: re.Pattern, kind: str, repl: Callable[[re.Match], str], text: str) -> str:
            out, kept, pos = [], [], 0
            for m in pattern.finditer(text):
                new = repl(m)
                if new == m.group():
                    continue
                found[kind] += 1
                a, b = m.span()
                out.append(text[pos:a])
                kept.extend(spans[pos:a])
                lo = spans[a][0] if a < len(spans) else (spans[-1][1] if spans else 0)
                hi = spans[b - 1][1] if b > a else lo
                out.append(new)
                kept.extend([(lo, hi)] * len(new))
                pos = b
            if not out:
                return text
            out.append(text[pos:])
            kept.extend(spans[pos:])
            spans[:] = kept
            return "".join(out)

        low = s.lower()
        for kind, keywords, pattern in rules.SECRET_RULES:
            if any(k in low for k in keywords):
                s = sub(pattern, kind, lambda m, k=kind: rules.SECRET.format(k), s)
        if found["aws"]:
            s = sub(rules.AWS_SECRET, "aws", lambda m: rules.SECRET.format("aws"), s)
        s = sub(
            rules.BASE64_BLOB,
            "base64",
            lambda m: rules.SECRET.format("base64") if rules.opaque(m.group()) else m.group(),
            s,
        )
        if "@" in s:
            s = sub(
                rules.URL_CREDENTIALS,
                "url-credentials",
                lambda m: m.group(1) + rules.SECRET.format("credentials") + "@",
                s,
            )
        low = s.lower()
        if "authorization" in low:
            s = sub(
                rules.AUTHORIZATION, "authorization", lambda m: m.group(1) + rules.SECRET.format("authorization"), s
            )
        if "bearer" in low:
            s = sub(rules.BEARER, "bearer", lambda m: m.group(1) + rules.SECRET.format("bearer"), s)
        if any(k in low for k in ("pass", "pwd", "secret", "token", "key", "credential", "auth")):
            s = sub(rules.ASSIGNMENT, "credential", lambda m: m.group(1) + rules.SECRET.format("credential"), s)
            if "--" in s:
                s = sub(rules.CLI_FLAG, "credential", lambda m: m.group(1) + rules.SECRET.format("credential"), s)
        if self._store_re is not None:
            s = sub(self._store_re, "store-path", lambda m: "[store]", s)
        if "/" in s or "\\" in s:
            s = sub(rules.HOME_PATH, "home-path", lambda m: m.group(1) + self._user(m.group(2)), s)
            s = sub(rules.WINDOWS_HOME, "home-path", lambda m: m.group(1) + self._user(m.group(2)), s)
        if "~" in s:
            s = sub(rules.TILDE_USER, "home-path", lambda m: "~" + self._user(m.group(1)), s)
        if "@" in s:
            s = sub(rules.EMAIL, "email", lambda m: self._pseudonym("email", "email", m.group().lower()), s)
        if self._host_re is not None:
            s = sub(self._host_re, "host", lambda m: self.hosts[m.group().lower()], s)
        if ":" in s:
            s = sub(rules.IPV6_CANDIDATE, "ipv6", self._ipv6, s)
        if ":" in s or "-" in s or "." in s:
            s = sub(rules.MAC, "mac", lambda m: self._pseudonym("mac", "mac", m.group().lower()), s)
        if "." in s:
            s = sub(
                rules.IPV4,
                "ipv4",
                lambda m: m.group() if m.group() in rules.KEPT_ADDRESSES else self._pseudonym("ip", "ip", m.group()),
                s,
            )
            s = sub(rules.FQDN, "domain", self._domain, s)
        if "//" in s:
            s = sub(rules.URL_HOST, "domain", lambda m: m.group(1) + self._name(m.group(2)), s)
        if any(k in low for k in ("host", "_name", "endpoint")):
            s = sub(rules.HOST_ASSIGNMENT, "domain", lambda m: m.group(1) + self._name(m.group(2)), s)
        if "…" in s or "⟧" in s:
            s = sub(rules.EXCERPT_HEAD, "excerpt-edge", rules.cut, s)
            s = sub(rules.EXCERPT_TAIL, "excerpt-edge", rules.cut, s)
        return s, found

    def _name(self, name: str) -> str:
        low = name.lower()
        if (
            low in rules.KEPT_NAMES
            or low in self._pseudonyms
            or re.fullmatch(r"(?:ip|ipv6|mac|domain|email|user)-\d+", low)
        ):
            return name
        return self._pseudonym("domain", "domain", low)

    def _user(self, name: str) -> str:
        if re.fullmatch(r"user-\d+", name):
            return name
        return self._pseudonym("user", "user", name)

    def _ipv6(self, m: re.Match) -> str:
        text = m.group()
        # a candidate may run into the `:port` or the sentence after it: the longest valid prefix counts
        for end in range(len(text), 1, -1):
            head = text[:end]
            if head[-1] in ".:" and not head.endswith("::"):
                continue
            try:
                addr = ipaddress.IPv6Address(head)
            except ValueError:
                continue
            if head in rules.KEPT_ADDRESSES:
                return text
            return self._pseudonym("ipv6", "ipv6", addr.compressed) + text[end:]
        return text

    def _domain(self, m: re.Match) -> str:
        name = m.group()
        first, _, rest = name.partition(".")
        if first in self._pseudonyms:
            # a store host's own domain name: keep saying which host it is
            return f"{first}.{self._pseudonym('domain', 'domain', rest.lower())}"
        return self._pseudonym("domain", "domain", name.lower())

    def text(self, s: str, times: int = 1) -> str:
        """`s` with everything identifying masked; `times` occurrences of it are counted.

        The evidence of a reply the model says was cut from a whole text (`excerpts`), and a value the
        catalog's excerpt() marked with its cut, are masked whole and cut after."""
        if s in self.excerpts:
            return self._counted(s, times, lambda: self._recut(self.excerpts[s]))
        if EXCERPT_MARK in s:
            m = rules.MARKED.fullmatch(s)
            if m is not None:
                return self._counted(s, times, lambda: self._cut_to(m.group(1), int(m.group(2))))
        if s in self.hosts or s.lower() in self.hosts:
            # a value that is exactly a host (a host column, a file's host) is masked even when the
            # name is an ordinary word
            self.counts["host"] += times
            return self.hosts[s.lower()]
        hit = self._cache.get(s)
        if hit is None:
            hit = self._cache[s] = self._mask(s)
        for k, n in hit[1].items():
            self.counts[k] += n * times
        return hit[0]

    def _counted(self, key: str, times: int, masked: Callable[[], tuple[str, collections.Counter]]) -> str:
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = masked()
        for k, n in hit[1].items():
            self.counts[k] += n * times
        return hit[0]

    def _whole(self, s: str) -> tuple[str, "_Cut", collections.Counter]:
        """`s` masked whole, with where each of its characters went."""
        spans = [(i, i + 1) for i in range(len(s))]
        masked, found = self._mask(s, spans)
        return masked, _Cut(spans, len(s)), found

    def _cut_to(self, value: str, n: int) -> tuple[str, collections.Counter]:
        """The first `n` characters of `value` once masked (a mask the cut falls in is kept whole)."""
        if n >= len(value):
            return self._mask(value)
        masked, cut, found = self._whole(value)
        return masked[: cut.end(n)], found

    def _recut(self, ex) -> tuple[str, collections.Counter]:
        """A reply's evidence cut from its whole text masked (forensics.analysis.detectors.Excerpt)."""
        from forensics.analysis.detectors import esc

        head, f1 = self._mask(ex.head)
        tail, f2 = self._mask(ex.tail)
        src = ex.source
        if ex.end <= ex.start or not src:
            return head + tail, f1 + f2
        masked, cut, f3 = self._whole(src)
        a, b = max(0, ex.start - ex.width), min(len(src), ex.end + ex.width)
        pre = cut.start(a), cut.start(ex.start)
        core = pre[1], max(pre[1], cut.end(min(ex.end, ex.start + 80)))
        post = max(core[1], cut.start(ex.end)), max(core[1], cut.start(ex.end), cut.end(b))
        snippet = (
            ("…" if pre[0] > 0 else "")
            + esc(masked[pre[0] : pre[1]])
            + "⟦"
            + esc(masked[core[0] : core[1]])
            + "⟧"
            + esc(masked[post[0] : post[1]])
            + ("…" if post[1] < len(masked) else "")
        )
        return head + snippet + tail, f1 + f2 + f3

    # -- result models ---------------------------------------------------------------------------

    def value(self, v):
        """`v` with every string in it masked: frames, dicts (keys too), lists, tuples, dataclasses."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, pl.DataFrame):
            return self.frame(v)
        if isinstance(v, pl.Series):
            return self.series(v)
        if isinstance(v, dict):
            return {self.value(k) if isinstance(k, str) else k: self.value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.value(x) for x in v)
        if isinstance(v, Counters):  # read from the store as they are written: masked as they stream by
            return dataclasses.replace(v, host=self.text)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return dataclasses.replace(
                v,
                **{
                    f.name: self.value(getattr(v, f.name))
                    for f in dataclasses.fields(v)
                    if f.init and not f.metadata.get("internal")
                },
            )
        return v

    def series(self, s: pl.Series) -> pl.Series:
        name = self.text(s.name) if s.name else s.name
        dtype = s.dtype
        if dtype == pl.Utf8:
            return self._strings(s).rename(name)
        if isinstance(dtype, (pl.Categorical, pl.Enum)):
            return self._strings(s.cast(pl.Utf8)).rename(name)
        if dtype.is_nested():
            return pl.Series(name, [self.value(x) for x in s.to_list()], dtype=dtype)
        return s.rename(name)

    def _strings(self, s: pl.Series) -> pl.Series:
        if s.len() == 0:
            return s
        # each distinct value is masked once; the counts still count every row
        counts = s.drop_nulls().value_counts()
        old, new = [], []
        for value, n in counts.iter_rows():
            masked = self.text(value, n)
            if masked != value:
                old.append(value)
                new.append(masked)
        return s.replace(old, new) if old else s

    def frame(self, df: pl.DataFrame) -> pl.DataFrame:
        cols, seen = [], set()
        for s in df.get_columns():
            s = self.series(s)
            name, k = s.name, 2
            while s.name in seen:  # two secrets in two column names mask to the same text
                s = s.rename(f"{name}_{k}")
                k += 1
            seen.add(s.name)
            cols.append(s)
        return pl.DataFrame(cols) if cols else df

    def summary(self) -> str:
        """One line for stderr: what was masked, by kind, with counts."""
        parts = [f"{self.counts[k]} {k}" for k in rules.KINDS if self.counts[k]]
        return "redacted: " + (", ".join(parts) if parts else "nothing to mask")


class _Cut:
    """Where a cut of the original text falls in its masked text: a mask the cut falls inside is kept
    whole (a fragment of a secret is a secret; a whole mask says what was there)."""

    def __init__(self, spans: list[tuple[int, int]], length: int):
        self.spans, self.length = spans, length

    def start(self, p: int) -> int:
        """The masked offset where what follows original offset `p` starts."""
        for j, (_, hi) in enumerate(self.spans):
            if hi > p:
                return j
        return len(self.spans)

    def end(self, p: int) -> int:
        """The masked offset where what precedes original offset `p` ends."""
        for j in range(len(self.spans) - 1, -1, -1):
            if self.spans[j][0] < p:
                return j + 1
        return 0


def mask(model, red: Redactor):
    """`model` (a result model, a frame, anything `Redactor.value` takes) masked by `red`, whole:
    the evidence of replies the model knows the whole text of is cut again from it, masked."""
    for ex in getattr(model, "excerpts", None) or ():
        red.excerpts.setdefault(ex.text(), ex)
    return red.value(model)
