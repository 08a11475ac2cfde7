"""`--redact`: the planted-secret probe over every command and format, and the masking's own rules.

The probe builds a small store whose log lines, transcript replies, file paths and host names carry
fresh random secrets of every kind (several shapes each), runs every command and format with and
without `--redact`, and checks that without it the secrets are there (the probe reaches each output)
and with it none of them, nor a telling piece of one, is left in the files, stdout or stderr.
Every failure names the seed: rerun with FORENSICS_TEST_SEED=<seed> to get the same secrets. The
suite's own run uses a fixed seed, so CI judges a change and not the draw; `FORENSICS_TEST_SEED=random`
draws fresh ones (run it in a loop to look for new misses, then make the seed that found one the default).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import random
import re
import string

import polars as pl
import pytest
from click.testing import CliRunner

from forensics.analysis.session import Session
from forensics.cli import main
from forensics.reports.redact import Redactor
from forensics.store import Store
from tests.conftest import ingest_paths, seed

# 2137212531 planted a MAC in a file name right after a dash (`sglang-02:5b:…:21.log`)
SEED = seed(2137212531)
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
WINDOW = 8  # a run this long of a secret's random part is a telling piece of it


class Plant:
    """Random secrets, each with the pieces of it that must not survive (`needles`)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.needles: dict[str, str] = {}  # needle -> kind

    def pick(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def word(self, n: int = 8) -> str:
        return self.pick(string.ascii_lowercase, n)

    def add(self, kind: str, text: str, *cores: str, windows: tuple[str, ...] = ()) -> str:
        """`text` is planted; it, its `cores` and every WINDOW-long run of `windows` are needles."""
        for n in (text, *cores):
            self.needles[n] = kind
        for w in windows:
            for i in range(len(w) - WINDOW + 1):
                self.needles[w[i : i + WINDOW]] = kind
        return text

    def octets(self) -> str:
        return ".".join(str(self.rng.randint(11, 249)) for _ in range(4))

    def hextets(self, n: int) -> list[str]:
        return [f"{self.rng.randint(0x1000, 0xFFFF):x}" for _ in range(n)]

    def jwt(self) -> tuple[str, str]:
        def b64(obj) -> str:
            return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

        sub = self.pick(ALNUM, 16)
        sig = self.pick(ALNUM + "-_", 43)
        return f"{b64({'alg': 'HS256', 'typ': 'JWT'})}.{b64({'sub': sub, 'name': self.word()})}.{sig}", sub + sig

    def secrets(self) -> dict[str, list[str]]:
        """Every kind, several shapes each; the first of each kind has no `/` (it fits a file name)."""
        a, p, s = self.add, self.pick, {}
        w = self.word
        s["email"] = [
            a("email", f"{(u1 := w(7))}.{(u2 := w(6))}@{(d := w(8))}.example.com", u1, u2, d),
            a("email", f"{(u := w(8))}+ops@corp-{(d := w(7))}.io", u, d),
            a("email", f"{(u := w(6))}@{(d := w(9))}.co.uk", u, d),
        ]
        s["ipv4"] = [
            a("ipv4", self.octets()),
            a("ipv4", self.octets()) + f":{self.rng.randint(1024, 65535)}",
            "peer=" + a("ipv4", f"10.{self.rng.randint(1, 254)}.{self.rng.randint(1, 254)}.{self.rng.randint(1, 254)}"),
        ]
        h = self.hextets(8)
        full = a("ipv6", ":".join(["2001", "db8", *h[:6]]))
        short = a("ipv6", f"fd{h[6][:2]}:{h[7]}::{h[0]}:{h[1]}")
        link = a("ipv6", f"fe80::{h[2]}:{h[3]}")
        mapped = a("ipv6", f"::ffff:{(v4 := self.octets())}", v4)
        s["ipv6"] = [full, f"[{short}]:8998", f"[{link}%eth0]:{self.rng.randint(1024, 65535)}", mapped]
        for addr in (full, short, link):
            self.needles[ipaddress.IPv6Address(addr).exploded] = "ipv6"
        s["domain"] = [
            a("domain", f"{(x := w(7))}-gw-{self.rng.randint(2, 99)}.{(y := w(6))}.example.com", x, y),
            a("domain", f"{(x := w(8))}-decode-3.{(y := w(7))}.svc.cluster.local", x, y),
            a("domain", f"{(x := w(7))}.{(y := w(6))}.svc", x, y),
            a("domain", f"gpu{self.rng.randint(10, 99)}.{(x := w(8))}.internal", x),
            "http://" + a("domain", f"{(x := w(9))}-router", x) + ":8000/v1/chat/completions",
        ]
        s["mac"] = [
            a("mac", ":".join(p("0123456789abcdef", 2) for _ in range(6))),
            a("mac", "-".join(p("0123456789ABCDEF", 2) for _ in range(6))),
            a("mac", ".".join(p("0123456789abcdef", 4) for _ in range(3))),
        ]
        s["home-path"] = [
            f"C:\\Users\\{a('home-path', w(9))}\\Desktop\\run.log",
            f"~{a('home-path', w(8))}/dumps",
            f"/home/{a('home-path', w(8))}/sglang/logs",
            f"/Users/{a('home-path', w(7))}/Downloads/x.tar",
        ]
        s["url-credentials"] = [
            f"https://{a('url-credentials', w(8))}:{a('url-credentials', p(ALNUM, 14))}@{w(6)}.example.org/x",
            f"redis://:{a('url-credentials', p(ALNUM, 16))}@10.1.2.3:6379/0",
            f"postgres://{a('url-credentials', w(7))}:{a('url-credentials', p(ALNUM, 12) + '!x')}@db:5432/app",
        ]
        s["bearer"] = [
            f"Authorization: Bearer {a('bearer', p(ALNUM, 32))}",
            f"bearer {a('bearer', p(ALNUM + '-._', 40))}",
            f"-H 'authorization: {a('bearer', p(ALNUM, 24))}'",
        ]
        jwts = [self.jwt() for _ in range(2)]
        s["jwt"] = [a("jwt", t, windows=(core,)) for t, core in jwts]

        def key(kind, prefix, body_alphabet, n, suffix=""):
            body = p(body_alphabet, n)
            return a(kind, prefix + body + suffix, windows=(body,))

        digits = string.digits
        s["github"] = [
            key("github", "ghp_", ALNUM, 36),
            key("github", "gho_", ALNUM, 36),
            key("github", "ghs_", ALNUM, 36),
            key("github", "github_pat_", ALNUM, 22, "_" + p(ALNUM, 59)),
        ]
        s["slack"] = [
            a("slack", f"xoxb-{p(digits, 12)}-{p(digits, 13)}-{(b := p(ALNUM, 24))}", windows=(b,)),
            a(
                "slack",
                f"xoxp-{p(digits, 11)}-{p(digits, 12)}-{p(digits, 12)}-{(b := p('0123456789abcdef', 32))}",
                windows=(b,),
            ),
            a(
                "slack",
                f"xapp-1-A{p(string.ascii_uppercase + digits, 10)}-{p(digits, 13)}-{(b := p('0123456789abcdef', 64))}",
                windows=(b,),
            ),
        ]
        aws_secret = p(B64, 40)
        s["aws"] = [
            key("aws", "AKIA", string.ascii_uppercase + "234567", 16),
            key("aws", "ASIA", string.ascii_uppercase + "234567", 16),
            f"aws_secret_access_key={a('aws', p(ALNUM, 40))}",
            key("aws", "AKIA", string.ascii_uppercase + "234567", 16)
            + " "
            + a("aws", aws_secret, windows=(aws_secret,)),
        ]
        s["openai"] = [
            key("openai", "sk-", ALNUM, 48),
            key("openai", "sk-proj-", ALNUM + "-_", 74, "T3BlbkFJ" + p(ALNUM, 74)),
        ]
        s["anthropic"] = [
            key("anthropic", "sk-ant-api03-", ALNUM + "-_", 93, "AA"),
            key("anthropic", "sk-ant-admin01-", ALNUM + "-_", 93, "AA"),
        ]
        s["huggingface"] = [
            key("huggingface", "hf_", string.ascii_letters, 34),
            key("huggingface", "api_org_", string.ascii_letters, 34),
        ]
        s["google"] = [key("google", "AIza", ALNUM + "-_", 35), key("google", "AIza", ALNUM, 35)]
        s["credential"] = [
            f"password={a('credential', p(ALNUM, 14))}",
            f'"api_key": "{a("credential", p(ALNUM, 20))}"',
            f"DB_PASSWORD='{a('credential', p(ALNUM, 10))}'",
            f"--api-key {a('credential', p(ALNUM, 18))}",
        ]
        pem = "\n".join(p(B64, 64) for _ in range(4))
        pem2 = "\\n".join(p(B64, 64) for _ in range(3))
        s["private-key"] = [
            a(
                "private-key",
                f"-----BEGIN RSA PRIVATE KEY-----\n{pem}\n-----END RSA PRIVATE KEY-----",
                windows=tuple(pem.split("\n")),
            ),
            a(
                "private-key",
                f"-----BEGIN OPENSSH PRIVATE KEY-----\\n{pem2}\\n-----END OPENSSH PRIVATE KEY-----",
                windows=tuple(pem2.split("\\n")),
            ),
            a("private-key", f"-----BEGIN PRIVATE KEY-----\n{(cut := p(B64, 48))}", windows=(cut,)),
        ]
        return s


def _stats(host_ts: int, role: str, n: int = 6) -> list[str]:
    if role == "prefill":
        return [
            f"[2026-11-20 14:00:{host_ts + 2 * i:02d} DP0 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 8192, "
            "#cached-token: 0, token usage: 0.01, #running-req: 1, #queue-req: 0, #pending-token: 0, "
            "#bootstrap-req: 0, #inflight-req: 0, cuda graph: False, input throughput (token/s): 8192.00"
            for i in range(n)
        ]
    return [
        f"[2026-11-20 14:00:{host_ts + 2 * i:02d} DP0 TP0 EP0] Decode batch, #running-req: 1, #token: 100, "
        "token usage: 0.01, #prealloc-req: 0, #transfer-req: 0, cuda graph: True, gen throughput (token/s): 50.0, "
        "#queue-req: 0"
        for i in range(n)
    ]


ROOM = 4242424242424242421
RID_P, RID_D = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
# text every report should still show as it is
KEPT = ["sglang 0.5.23", "deepseek-v3.2", "Decode transfer failed", "14:00:09", str(ROOM), RID_D, "the agent retried"]


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    plant = Plant(SEED)
    secrets = plant.secrets()
    # a log line holds a key's line breaks as `\n`, as a logger that quotes its message writes them
    flat = [x.replace("\n", "\\n") for v in secrets.values() for x in v]
    words = plant.word(7), plant.word(7)
    # decode-1 and decode-12: a mask by substring would leave `2` after the first one's pseudonym
    hosts = {
        "prefill": plant.add("host", f"{words[0]}-prefill-7", words[0]),
        "decode1": plant.add("host", f"{words[1]}-decode-1", words[1]),
        "decode12": plant.add("host", f"{words[1]}-decode-12"),
    }
    base = tmp_path_factory.mktemp("redact-probe")
    user = plant.add("home-path", plant.word(9))
    dump = base / "home" / user / "dump"

    def log(host: str, name: str, lines: list[str]) -> None:
        (dump / host).mkdir(parents=True, exist_ok=True)
        (dump / host / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    half = len(flat) // 2
    log(
        hosts["prefill"],
        "sglang.log",
        [
            "[2026-11-20 14:00:00] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3.2', "
            f"served_model_name='deepseek-v3.2', api_key='{secrets['openai'][0]}', host='0.0.0.0', "
            "disaggregation_mode='prefill') sglang 0.5.23",
            *_stats(1, "prefill"),
            f"[2026-11-20 14:00:08 DP0 TP0 EP0] Prefill transfer failed for request rank=0 req.rid='{RID_P}' "
            f"req.bootstrap_room={ROOM} with exception KVTransferError(bootstrap_room={ROOM}): "
            f"peer {hosts['decode12']}:8998 and {hosts['decode1']}:8998 unreachable; " + " ; ".join(flat[:half]),
            f'[2026-11-20 14:00:20] INFO:     {plant.add("ipv4", plant.octets())}:51234 - "POST /generate HTTP/1.1" 200 OK',
        ],
    )
    for key, peer in (("decode1", "decode12"), ("decode12", "decode1")):
        log(
            hosts[key],
            "sglang.log",
            [
                *_stats(0, "decode"),
                f"[2026-11-20 14:00:09 DP0 TP0 EP0] Decode transfer failed for request rank=0 "
                f"decode_req.req.rid='{RID_D}' decode_req.req.bootstrap_room={ROOM} with exception "
                f"KVTransferError(bootstrap_room={ROOM}): self {hosts[key]} peer {hosts[peer]}; "
                + " ; ".join(flat[half:]),
                f"[2026-11-20 14:00:11 DP0 TP0 EP0] the agent retried; {' '.join(flat)}",
                f"garbage that no parser reads: {' '.join(flat[:half])}",
            ],
        )
    # every kind as a host of its own (a folder name), and in a file name
    for kind, values in secrets.items():
        first = values[0].replace("\n", " ")
        if "/" in first or len(first) > 200:  # a file name is at most 255 bytes
            continue
        h = plant.add("host", first)
        log(h, "sglang.log", _stats(20, "decode", 2))
        log(hosts["decode1"], f"sglang-{first}.log", _stats(30, "decode", 2))
    # transcripts: a corrupted reply (a DSML leak) that quotes every secret, and a clean one
    leak = '\n<｜DSML｜invoke name="edit">\n<｜DSML｜parameter name="filePath" string="true">/x</｜DSML｜parameter>'
    records = []
    for i, text in enumerate(
        [" ".join(flat[:8]) + leak, "Done: " + " ".join(flat) + leak, "All good, the agent retried."]
    ):
        conn = f"c-{i}"
        records += [
            {
                "ts": f"2026-11-20T14:00:{10 + 4 * i:02d}.000Z",
                "dir": "req",
                "conn": conn,
                "upstream": secrets["domain"][-1],
                "body": {
                    "model": "deepseek-v3.2",
                    "stream": False,
                    "messages": [{"role": "user", "content": " ".join(flat)}],
                },
            },
            {
                "ts": f"2026-11-20T14:00:{12 + 4 * i:02d}.000Z",
                "dir": "resp",
                "conn": conn,
                "status": 200,
                "latency_ms": 2000,
                "body": {
                    "id": f"chatcmpl-{i}",
                    "object": "chat.completion",
                    "model": "deepseek-v3.2",
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 50, "total_tokens": 60},
                },
            },
        ]
    log("agent", "proxy.jsonl", [json.dumps(r, ensure_ascii=False) for r in records])
    store = base / "store"
    ingest_paths([dump], store)
    Store(store).set_clock(hosts["decode12"], 0.25)
    for path in {str(store), os.path.realpath(store)}:
        plant.needles[path] = "store-path"
    return {
        "store": str(store),
        "plant": plant,
        "hosts": hosts,
        "secrets": secrets,
        "out": tmp_path_factory.mktemp("out"),
    }


def _leaks(plant: Plant, text: str) -> list[str]:
    return sorted({f"{kind}: {needle!r}" for needle, kind in plant.needles.items() if needle in text})


def _texts_drawn(monkeypatch) -> list[str]:
    """The text of every figure saved from now on (a PNG holds its text as pixels)."""
    import matplotlib.text
    from matplotlib.figure import Figure

    drawn: list[str] = []
    save = Figure.savefig

    def spy(self, *a, **kw):
        self.canvas.draw()  # tick labels exist only once drawn
        drawn.extend(t.get_text() for t in self.findobj(matplotlib.text.Text))
        return save(self, *a, **kw)

    monkeypatch.setattr(Figure, "savefig", spy)
    return drawn


def _run(probe, args: list[str], redact: bool, monkeypatch, fmt: str) -> str:
    """Everything one command shows: stdout, stderr and the file it writes (the PNG's drawn text)."""
    out = probe["out"] / f"{'-'.join(a for a in args if a.isalnum())[:60]}-{fmt}-{int(redact)}"
    drawn = _texts_drawn(monkeypatch) if fmt == "png" else []
    file_formats = ("html", "png", "svg", "perfetto", "parquet")
    argv = [
        *args,
        "--store",
        probe["store"],
        "--format",
        fmt,
        *(["-o", str(out)] if fmt in file_formats else []),
        *(["--redact"] if redact else []),
    ]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, f"seed {SEED}: {argv} exited {r.exit_code}: {r.output[-2000:]}"
    text = r.stdout + "\n" + r.stderr
    if fmt in file_formats:
        text += "\n" + (
            out.read_bytes().decode("latin-1")
            if fmt == "png"
            else _parquet_text(out)
            if fmt == "parquet"
            else out.read_text(encoding="utf-8")
        )
    return text + "\n".join(drawn)


def _parquet_text(path) -> str:
    """Every value of a Parquet file as text (its bytes are compressed: a secret in them is not findable as is)."""
    return "\n".join(str(v) for row in pl.read_parquet(path).iter_rows() for v in row)


COMMANDS = [
    (["timeline", "--bucket", "5s"], ["table", "markdown", "csv", "json", "html", "png", "svg", "perfetto"]),
    (["evidence"], ["markdown", "json"]),
    (["replies"], ["table", "csv", "json", "markdown"]),
    (["room", str(ROOM)], ["table", "csv", "json", "markdown"]),
    (["sql", "SELECT path, host, status FROM files ORDER BY path"], ["table", "json"]),
    (
        ["sql", "SELECT host, kind, message, peer, source_file FROM events ORDER BY host, source_file, line_no"],
        ["table", "csv", "tsv", "json", "jsonl", "markdown", "parquet"],
    ),
    (
        ["sql", "SELECT session_id, turn_id, content, evidence, source_file FROM turns ORDER BY t_start"],
        ["csv", "tsv", "jsonl", "markdown"],
    ),
    (["sql", "SELECT * FROM unparsed"], ["json"]),
]


@pytest.mark.parametrize(
    "args,fmt",
    [(a, f) for a, fs in COMMANDS for f in fs],
    ids=[f"{a[0]}-{i}-{f}" for i, (a, fs) in enumerate(COMMANDS) for f in fs],
)
@pytest.mark.slow
def test_no_planted_secret_survives(probe, args, fmt, monkeypatch):
    plain = _run(probe, args, False, monkeypatch, fmt)
    # the probe reaches this output: without --redact some of what was planted is in it
    assert _leaks(probe["plant"], plain), f"seed {SEED}: {args} {fmt} shows nothing planted even unredacted"
    masked = _run(probe, args, True, monkeypatch, fmt)
    leaks = _leaks(probe["plant"], masked)
    assert not leaks, f"seed {SEED}: {args} --format {fmt} --redact leaks {len(leaks)}: {leaks[:20]}"
    # stderr says what was masked, on one line
    said = [line for line in masked.splitlines() if line.startswith("redacted: ")]
    assert len(said) == 1 and re.fullmatch(r"redacted: \d+ [a-z0-9-]+(, \d+ [a-z0-9-]+)*", said[0]), said


@pytest.mark.parametrize(
    "table",
    [
        "files",
        "batches",
        "events",
        "unparsed",
        "transfer_events",
        "room_events",
        "transfers",
        "room_failures",
        "rooms",
        "turns",
        "replies",
        "reply_candidates",
    ],
)
def test_no_table_leaks_through_sql(probe, table, monkeypatch):
    leaks = _leaks(probe["plant"], _run(probe, ["sql", f"SELECT * FROM {table}"], True, monkeypatch, "json"))
    assert not leaks, f"seed {SEED}: SELECT * FROM {table} --redact leaks {leaks[:20]}"


def _sql_json(probe, query: str, redact: bool = True) -> list[dict]:
    argv = ["sql", "--store", probe["store"], "--format", "json", query, *(["--redact"] if redact else [])]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_hosts_are_whole_tokens_with_one_pseudonym_each(probe):
    hosts = probe["hosts"]
    with Session.open(probe["store"], materialize=False) as s:
        known = s.redaction_names(), s.store.root
    names = {h: Redactor.for_store(*known).text(h) for h in hosts.values()}
    assert len(set(names.values())) == len(names), f"seed {SEED}: {names}"
    assert all(re.fullmatch(r"host-\d+", p) for p in names.values()), names
    rows = _sql_json(probe, "SELECT host, message FROM events WHERE kind = 'transfer_failed' ORDER BY host")
    seen = {}
    for r in rows:
        m = re.search(r"self (\S+) peer (\S+);", r["message"])
        if m:
            # the host column and the message say the same pseudonym for the same machine
            assert m.group(1) == r["host"], f"seed {SEED}: {r['host']} vs {m.group(1)}"
            seen[m.group(1)] = m.group(2)
    assert len(seen) == 2 and seen[next(iter(seen))] in seen, f"seed {SEED}: {seen}"
    a, b = sorted(seen)
    assert seen[a] == b and seen[b] == a
    # decode-12 is its own pseudonym, never decode-1's followed by `2`
    prefill = [
        r for r in _sql_json(probe, "SELECT message FROM events WHERE kind = 'transfer_failed' AND role = 'prefill'")
    ]
    text = prefill[0]["message"]
    assert f"peer {names[hosts['decode12']]}:8998 and {names[hosts['decode1']]}:8998" in text, (
        f"seed {SEED}: {text[:300]}"
    )


def test_ordinary_text_is_kept(probe):
    rows = _sql_json(
        probe, "SELECT ts_raw || ' ' || coalesce(message, '') AS t FROM events UNION ALL SELECT content FROM turns"
    )
    text = "\n".join(r["t"] or "" for r in rows)
    for kept in KEPT:
        assert kept in text, f"seed {SEED}: {kept!r} was masked"
    # the transcripts folder is host `agent`: the value is masked, the word in text is not
    files = _sql_json(probe, "SELECT DISTINCT host FROM files")
    assert "agent" not in {r["host"] for r in files}
    rooms = _sql_json(probe, f"SELECT bootstrap_room, rid_decode FROM rooms WHERE bootstrap_room = {ROOM}")
    assert rooms and rooms[0]["rid_decode"] == RID_D


# -- the masking's rules, on text ------------------------------------------------------------------


def test_hosts_whole_tokens_and_word_hosts():
    r = Redactor(["decode-1", "decode-12", "agent", "gpu7.corp.example.com"])
    out = r.text(
        "decode-12 decode-1 decode-1:8998 /logs/decode-12/sglang.log pd-decode-1x decode-1.log "
        "the agent said gpu7.corp.example.com DECODE-12"
    )
    p1, p12, big = r.text("decode-1"), r.text("decode-12"), r.text("gpu7.corp.example.com")
    assert len({p1, p12, big, r.text("agent")}) == 4
    assert out == (f"{p12} {p1} {p1}:8998 /logs/{p12}/sglang.log pd-decode-1x {p1}.log the agent said {big} {p12}")
    # a host's own domain name keeps saying which host it is
    assert r.text("decode-1.prod.example.net").startswith(p1 + ".domain-")


def test_pseudonyms_are_consistent_across_one_model():
    r = Redactor(["decode-7"])
    model = {
        "rows": pl.DataFrame(
            {"host": ["decode-7", "x"], "peer": ["10.0.0.9:8998", "decode-7:1"], "hosts": [["decode-7"], []]}
        ),
        "offsets": {"decode-7": 1.5},
        "warnings": ["decode-7 at 10.0.0.9 and ops@foo.example.com"],
        "pair": ("ops@foo.example.com", 3),
    }
    out = r.value(model)
    h = out["rows"]["host"][0]
    assert out["rows"]["peer"].to_list() == ["ip-1:8998", f"{h}:1"]
    assert out["rows"]["hosts"].to_list() == [[h], []]
    assert out["offsets"] == {h: 1.5}
    assert out["warnings"] == [f"{h} at ip-1 and email-1"] and out["pair"] == ("email-1", 3)
    assert r.summary() == "redacted: 2 email, 5 host, 2 ipv4"


@pytest.mark.parametrize(
    "text",
    [
        "sglang 0.5.23 on deepseek-v3.2 with Qwen2.5-7B-Instruct, v1.2.3.4",
        "Decode batch, #running-req: 12, #token: 8192, token usage: 0.45, gen throughput (token/s): 50.0",
        "#new-token: 8192, #cached-token: 0, max_new_tokens=16384 tokenizer_path=deepseek-ai/DeepSeek-V3.2 api_key=None",
        "room 8478977372895780555 rid=0123456789abcdef0123456789abcdef at 2026-11-20T14:10:06.123456Z (14:10:06)",
        "File sglang/srt/disaggregation/nixl/conn.py, line 1153, in transfer_worker: self.agent.check_xfer_state",
        "listening on 0.0.0.0:30000 and 127.0.0.1:8998 and [::1]:80; see server.log and config.json",
        "KVTransferError(bootstrap_room=42): Aborted by AbortReq. ~10 s later, 3.14 ms",
    ],
)
def test_non_secrets_are_kept(text):
    r = Redactor(["decode-0", "prefill-0"])
    assert r.text(text) == text
    assert r.summary() == "redacted: nothing to mask"


def test_store_path_and_summary_line(tmp_path):
    r = Redactor([], [str(tmp_path / "store")])
    assert (
        r.text(f"forensics clocks set h 1 --store {tmp_path / 'store'}") == "forensics clocks set h 1 --store [store]"
    )
    r.text("ghp_" + "a1" * 18 + " ghp_" + "b2" * 18 + " ops@x.example.com")
    assert r.summary() == "redacted: 2 github, 1 store-path, 1 email"
