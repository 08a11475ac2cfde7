"""The shapes the redactor masks (forensics.reports.redact): secrets after gitleaks' default rules,
addresses, e-mails, domain names, MACs, home paths and host names, each kind with the keywords that
must occur before its pattern runs."""

from __future__ import annotations

import collections
import math
import re

from forensics.core.text import EXCERPT_MARK

SECRET = "[secret:{}]"
# a value the catalog's excerpt() kept whole for the masking: the value, then the length it is cut to
MARKED = re.compile(rf"(.*){EXCERPT_MARK}(\d+){EXCERPT_MARK}", re.S)

# (kind, keywords any of which must occur in the lower-cased text, pattern); the first rules win
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_B64 = r"A-Za-z0-9+/="
SECRET_RULES: list[tuple[str, tuple[str, ...], re.Pattern]] = [
    # privatekey: the whole block, or to the end of its base64 when the END line is cut off
    (
        "private-key",
        ("private key",),
        re.compile(
            r"-----BEGIN[ A-Z0-9_]{0,100}?PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END[ A-Z0-9_]{0,100}?PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:-]*)"
        ),
    ),
    # jwt: header and payload are base64 of JSON objects, so both start with `ey`
    ("jwt", ("ey",), re.compile(r"\bey[A-Za-z0-9_-]{10,}\.ey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_\-+/]*={0,2}")),
    (
        "github",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{22,})"),
    ),
    ("gitlab", ("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}")),
    (
        "slack",
        ("xox", "xapp-", "hooks.slack.com"),
        re.compile(
            r"\b(?:xox[abeoprs](?:\.xox[bp])?-[A-Za-z0-9-]{8,}|xapp-\d-[A-Za-z0-9-]{8,}"
            r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{8,})",
            re.I,
        ),
    ),
    (
        "aws",
        ("a3t", "akia", "asia", "abia", "acca"),
        re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ),
    ("anthropic", ("sk-ant-",), re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai", ("sk-",), re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}")),
    ("huggingface", ("hf_", "api_org_"), re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|api_org_[A-Za-z0-9]{20,})")),
    ("google", ("aiza",), re.compile(r"\bAIza[A-Za-z0-9_-]{30,}")),
    ("stripe", ("_live_", "_test_"), re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("npm", ("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{30,}")),
    ("pypi", ("pypi-",), re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{40,}")),
]
# user:password@ in a URL, also with JSON's escaped slashes (https:\/\/u:p@h)
URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,20}:(?:\\?/){2})([^\s/?#@\"'<>\\]+)@")
# curl: -H 'Authorization: Bearer …', or a bearer token on its own
AUTHORIZATION = re.compile(
    r"(?i)\b(authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?)"
    r"([^\s\"',;]{6,})"
)
BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})")
# generic-api-key's keywords, as assignments in code, config, JSON, env files and query strings;
# the key is kept (it says what was there), the value masked; plain numbers and null-ish values are
# not secrets (`#new-token: 8192`, `api_key=None`)
_KEYWORD = r"(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?|auth)"
_SUFFIX = r"(?:[_-]?(?:access|secret|api|auth|key|id|token|value|string|hash|b64|base64|pass))*"
ASSIGNMENT = re.compile(
    rf"(?i)(?<!\[)({_KEYWORD}{_SUFFIX}[\"']?\s*(?:[:=]|=>|:=)\s*[\"']?)"
    r"(?!\[secret:)(?!(?:none|null|nil|true|false|undefined|\*+|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)(?:[\s\"',;&}\])]|$))"
    r"((?<=\")[^\"\n]{1,256}(?=\")|(?<=')[^'\n]{1,256}(?=')|[^\s\"',;&}\])]{3,})"
)
# the same keywords as command-line flags: `--api-key VALUE`
CLI_FLAG = re.compile(
    r"(?i)((?<![\w-])--[a-z0-9-]{0,30}?(?:passw(?:or)?d|pwd|secret|token|api-?key|access-?key"
    r"|private-?key|credentials?)(?:-[a-z0-9]+)?\s+)(?!-)(?!(?:none|null|true|false|\d+)(?:\s|$))"
    r"([^\s\"']{3,})"
)
# aws_secret is a sub-rule of the access key: a bare 40-character secret next to an access key id
AWS_SECRET = re.compile(rf"(?<![{_B64}])[A-Za-z0-9+/]{{40}}(?![{_B64}])")

# detect-secrets' Base64HighEntropyString, with a shape test beside the entropy: a run of 40 or more
# standard base64 characters with upper and lower case and digits (a PEM body line, an AWS secret, a
# key pasted without its prefix); paths and model names break at `-`, `_` or `.` long before that
BASE64_BLOB = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=])")
BASE64_ENTROPY = 4.2
# an excerpt (a reply's evidence: `…` 40 characters ⟦match⟧ 40 characters `…`) can cut a secret so that
# what says what it is falls off: the piece at a cut is masked when it is not a plain word
EXCERPT_HEAD = re.compile(r"(?<=…)[A-Za-z0-9+/=_-]{4,}")
EXCERPT_TAIL = re.compile(r"[A-Za-z0-9+/=_-]{4,}(?=…|⟧)")
_PSEUDONYM = re.compile(r"(?:host|node|machine|ip|ipv6|mac|domain|email|user)-\d+")

EMAIL = re.compile(r"(?i)(?<![\w.+%-])[a-z0-9._%+-]+@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}(?![\w-])")
# the user's part of a home path: /home/x, /Users/x, C:\Users\x (also JSON's C:\\Users\\x), ~x
HOME_PATH = re.compile(r"(\\?/(?:home|Users)\\?/)([^/\s\"'<>|\\:;,]+)")
WINDOWS_HOME = re.compile(
    r"(?i)\b([a-z]:(?:\\\\|\\|/)(?:Users|Documents and Settings)(?:\\\\|\\|/))"
    r"([^\\/\s\"'<>|:;,]+)"
)
TILDE_USER = re.compile(r"(?<![\w~/.\\-])~([A-Za-z_][A-Za-z0-9_.-]{0,31})(?=/|$|[\s\"',;:)\]])")
IPV6_CANDIDATE = re.compile(r"(?<![\w:.%])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f.]*(?:%[A-Za-z0-9_.-]+)?")
# a MAC may follow a dash (`sglang-02:5b:…:21.log`), but not as the tail of a longer dashed hex run
MAC = re.compile(
    r"(?<![\w:.])(?<![0-9A-Fa-f]-)(?:[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}"
    r"|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})(?![\w:-])"
)
IPV4 = re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\w]|\.\d)")
# addresses that say where a server listened, not whose machine it was
KEPT_ADDRESSES = {"0.0.0.0", "127.0.0.1", "::", "::1", "255.255.255.255"}

# Domain names end in a known top-level domain, or `cluster.local` et al.: a dotted name ending in
# anything else is a file (`server.log`), a module (`sglang.srt.managers`) or a version. Two-letter
# country codes are TLDs unless they are also file extensions or code words (`x.py`, `t.to(`).
_GENERIC_TLDS = (
    "com net org edu gov mil int info biz io ai co dev cloud tech xyz app "
    "local localdomain localhost internal intranet lan corp home priv private svc cluster consul "
    "example test invalid arpa onion"
).split()
_NOT_TLDS = set(
    "py sh md rs so pl cc ps gz xz db ml js ts hh cs rb go hs fs el kt mk pm ui ok id to is it "
    "at be do no me my as am an in on or up we of if by".split()
)
_TLD = rf"(?:{'|'.join(sorted(set(_GENERIC_TLDS), key=len, reverse=True))}|(?!(?:{'|'.join(sorted(_NOT_TLDS))})\b)[a-z]{{2}})"
FQDN = re.compile(rf"(?i)(?<![\w.-])((?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.)+{_TLD})(?![\w-]|\.[a-z0-9])")

# a name that can only be a machine's: the host of a URL (`http://pd-router:8000/v1`: k8s service names
# have no domain), or the value of a host-like key; an address or a pseudonym there is already masked
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
URL_HOST = re.compile(
    rf"(?i)\b([a-z][a-z0-9+.-]{{1,20}}:(?:\\?/){{2}}(?:\[secret:credentials\]@)?)({_NAME})"
    r"(?=[:/\\?#\s\"'<>)\]]|$)"
)
HOST_ASSIGNMENT = re.compile(
    rf"(?i)(?<![A-Za-z0-9])((?:[a-z]+_)?(?:host|hostname|host_name|node_name|pod_name|"
    rf"server_name|endpoint)[\"']?\s*[:=]\s*[\"']?)((?=[A-Za-z]){_NAME})(?![\w.-])"
)
KEPT_NAMES = {"localhost", "none", "null", "true", "false"}

# host names that are also ordinary words of logs and reports (a transcripts folder called `agent`):
# masked where a whole value is the host, but not as a word inside text
WORD_HOSTS = set(
    "agent agents transcripts transcript logs log trace traces prefill decode router proxy server "
    "servers client gateway worker workers master main node host unified local localhost "
    "default data dump test tmp opencode claude sglang nixl ucx kvtrace store".split()
)
PSEUDONYM_PREFIXES = ("host", "node", "machine", "server-name")

# the order the kinds are reported in
KINDS = (
    "private-key",
    "jwt",
    "github",
    "gitlab",
    "slack",
    "aws",
    "anthropic",
    "openai",
    "huggingface",
    "google",
    "stripe",
    "npm",
    "pypi",
    "base64",
    "url-credentials",
    "authorization",
    "bearer",
    "credential",
    "store-path",
    "home-path",
    "email",
    "host",
    "ipv6",
    "mac",
    "ipv4",
    "domain",
    "excerpt-edge",
)


def opaque(run: str) -> bool:
    """A run of letters and digits random enough to be a key (mixed case, digits, high entropy)."""
    if not (re.search(r"[a-z]", run) and re.search(r"[A-Z]", run) and re.search(r"\d", run)):
        return False
    counts = collections.Counter(run)
    return -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values()) >= BASE64_ENTROPY


def cut(m: re.Match) -> str:
    """An excerpt's cut-off end that may be part of a secret, as `[cut]` (a pseudonym stays)."""
    piece = m.group()
    if _PSEUDONYM.fullmatch(piece) or not re.search(r"[0-9+/=]|.[A-Z]", piece):
        return piece
    return "[cut]"
