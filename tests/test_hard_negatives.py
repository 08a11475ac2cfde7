"""Engineers quote logs, tracebacks, tables and code: the detectors must not call that corruption.

Hard negatives are the hand-written replies in tests/replies/hard_negatives/ and every assistant
reply of the real transcripts (tests/conftest.py's REAL_TRANSCRIPTS; none of them is known to be
corrupt: their MANIFEST.md describes one ordinary Claude Code session). Real server log lines
(REAL_LOGS) quoted the four ways engineers quote them make a third set. Positives are the
hand-written corrupted replies in tests/replies/positives/, shaped after docs/formats/TRANSCRIPTS.md,
"Corrupted replies reported in public" and "Corruption signatures S1-S16", many of them next to code.

Every case is assessed as the last turn of a session of ordinary replies, so the per-session
entropy rule of S14 judges it as it would in a real store. Run `pytest -s` to see the figures.
"""

import dataclasses
import json
import pathlib

import pytest

from forensics.analysis import detectors as d
from forensics.analysis import verdicts
from forensics.core.turns import Turn
from forensics.parsers import claude_code
from forensics.parsers.base import Context, Source
from tests.conftest import REAL_LOGS, REAL_TRANSCRIPTS
from tests.corpus.texts import CLEAN_PROSE

REPLIES = pathlib.Path(__file__).parent / "replies"
REAL = REAL_TRANSCRIPTS / "claude_code"

MAX_NEGATIVE_FLAG_RATE = 0.01
MIN_PRECISION = 0.97
MIN_RECALL = 0.95


@dataclasses.dataclass
class Case:
    name: str
    turn: Turn
    expect: str | None


def load_case(path: pathlib.Path) -> Case:
    """One reply file: `@key: value` header lines, then the content; `@@@ reasoning` starts the reasoning."""
    lines = path.read_text(encoding="utf-8").split("\n")
    meta = {}
    while lines and lines[0].startswith("@") and not lines[0].startswith("@@@"):
        key, _, value = lines.pop(0)[1:].partition(":")
        meta[key.strip()] = value.strip()
    body = "\n".join(lines).rstrip("\n")
    content, _, reasoning = (
        body.partition("\n@@@ reasoning\n") if "\n@@@ reasoning\n" in body else body.partition("@@@ reasoning\n")
    )
    t = Turn(
        source="fixture",
        session_id=path.stem,
        turn_id=path.stem,
        source_file=str(path),
        content=content.rstrip("\n"),
        reasoning=reasoning.rstrip("\n"),
        finish_reason=meta.get("finish", "stop"),
        model=meta.get("model", "deepseek-v3.2"),
        completion_tokens=int(meta.get("completion", 40)),
        tools_offered=True,
        user_text=meta.get("user"),
    )
    return Case(path.stem, t, meta.get("expect"))


def load_dir(name: str) -> list[Case]:
    return [load_case(p) for p in sorted((REPLIES / name).glob("*.txt"))]


def _baseline() -> list[Turn]:
    # two short replies make one of the length the entropy rule compares (200 chars or more)
    texts = [CLEAN_PROSE[i] + "\n\n" + CLEAN_PROSE[i + 1] for i in range(0, 20, 2)]
    return [
        Turn(
            source="fixture",
            session_id="baseline",
            turn_id=f"b{i}",
            source_file="-",
            content=text,
            finish_reason="stop",
            completion_tokens=60,
            tools_offered=True,
        )
        for i, text in enumerate(texts)
    ]


def in_session(turn: Turn) -> d.Verdict:
    """The verdict of `turn` as the newest reply of a session of ordinary replies."""
    return d.assess_session(_baseline() + [turn])[-1]


def real_sessions() -> list[list[Turn]]:
    out = []
    for p in sorted(REAL.glob("*.jsonl")) if REAL.is_dir() else []:
        src = Source(path=str(p), fs_path=str(p), size=p.stat().st_size)
        (batch,) = list(claude_code.parse(src, Context()))
        rows = sorted(batch["turns"].to_dicts(), key=lambda r: r["seq"])
        out.append([verdicts._turn(r) for r in rows])
    return out


NEGATIVES = load_dir("hard_negatives")
POSITIVES = load_dir("positives")


def test_fixture_sets_are_large_and_labelled():
    assert len(NEGATIVES) >= 60 and len(POSITIVES) >= 35
    assert all(c.expect in d.SIGNATURES for c in POSITIVES), [c.name for c in POSITIVES if c.expect not in d.SIGNATURES]
    assert all(c.expect is None for c in NEGATIVES)
    # a positive names the signature it shows, in its file name
    assert all(c.name.startswith(c.expect.lower() + "_") for c in POSITIVES)


def _flagged_real() -> tuple[int, list[str]]:
    n, flagged = 0, []
    for session in real_sessions():
        own = d.assess_session(session)
        for t, v in zip(session, own):
            if not (t.content or t.reasoning).strip():
                continue
            n += 1
            alone = in_session(t)
            if v.corrupted or alone.corrupted:
                flagged.append(f"{t.session_id}/{t.turn_id}: {(v if v.corrupted else alone).evidence}")
    return n, flagged


def test_precision_recall_and_hard_negative_flag_rate():
    neg = [(c.name, in_session(c.turn)) for c in NEGATIVES]
    pos = [(c, in_session(c.turn)) for c in POSITIVES]
    n_real, real_flagged = _flagged_real()
    fixture_flagged = [f"{name}: {v.evidence}" for name, v in neg if v.corrupted]
    fp = len(fixture_flagged) + len(real_flagged)
    tp = sum(1 for _c, v in pos if v.corrupted)
    n_neg = len(neg) + n_real
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / len(pos)
    rate = fp / n_neg
    print(f"\nhard negatives: {len(neg)} fixtures + {n_real} real replies, flagged {fp} ({rate:.1%})")
    print(f"positives: {len(pos)}, found {tp}; precision {precision:.3f} recall {recall:.3f}")
    for line in fixture_flagged + real_flagged:
        print("FALSE ALARM", line[:200])
    for c, v in pos:
        if not v.corrupted:
            print("MISSED", c.name, v.signatures)
        elif c.expect not in v.signatures:
            print("OTHER SIGNATURE", c.name, "expected", c.expect, "got", v.signatures)
    assert rate <= MAX_NEGATIVE_FLAG_RATE
    assert precision >= MIN_PRECISION
    assert recall >= MIN_RECALL


def test_positives_fire_the_signature_they_show():
    wrong = [(c.name, v.signatures) for c in POSITIVES if c.expect not in (v := in_session(c.turn)).signatures]
    assert len(wrong) <= len(POSITIVES) * (1 - MIN_RECALL), wrong


@pytest.mark.parametrize("case", NEGATIVES, ids=[c.name for c in NEGATIVES])
def test_statistical_signatures_stay_quiet_on_quoted_material(case):
    hits = d.detect(case.turn)
    assert not set(hits) & set(d.DEGENERATE), {s: hits[s].note for s in hits}


# the ways a reply quotes log lines: pasted as they are, as a Markdown quote, fenced, inside a sentence
QUOTINGS = {
    "pasted": "Here is what the server logged:\n\n{lines}\n\nSo the decode side waited for the cache and then gave up.",
    "blockquote": "Here is what the server logged:\n\n{quoted}\n\nSo the decode side waited for the cache and then gave up.",
    "fenced": "Here is what the server logged:\n\n```\n{lines}\n```\n\nSo the decode side waited and then gave up.",
    "in_a_sentence": "The log says {first}, which is the decode side giving up on the cache.",
}


@pytest.mark.real_data
def test_real_log_lines_quoted_in_replies_are_not_corruption():
    replies = []
    for path in sorted(REAL_LOGS.rglob("*.log")):
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        for k in range(0, len(lines), 3):
            chunk = lines[k : k + 3]
            for how, template in QUOTINGS.items():
                text = template.format(
                    lines="\n".join(chunk), quoted="\n".join("> " + ln for ln in chunk), first=chunk[0].strip()
                )
                replies.append(
                    (
                        f"{path.name}:{k + 1} {how}",
                        Turn(
                            source="fixture",
                            session_id="logs",
                            turn_id=f"{path.name}-{k}-{how}",
                            source_file=str(path),
                            content=text,
                            finish_reason="stop",
                            completion_tokens=60,
                            tools_offered=True,
                        ),
                    )
                )
    flagged = [(name, v.evidence) for name, t in replies if (v := in_session(t)).corrupted]
    print(
        f"\nreal log lines quoted: {len(replies)} replies, flagged {len(flagged)} ({len(flagged) / len(replies):.1%})"
    )
    for name, ev in flagged:
        print("FALSE ALARM", name, (ev or "")[:160])
    assert len(replies) >= 100
    assert len(flagged) <= MAX_NEGATIVE_FLAG_RATE * len(replies)


def _tool_outputs() -> list[str]:
    """Text of every tool result in the real transcripts (file reads, greps, listings)."""
    out = []
    for path in sorted(REAL.glob("*.jsonl")) if REAL.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            content = obj.get("message", {}).get("content") if obj.get("type") == "user" else None
            for block in content if isinstance(content, list) else []:
                body = block.get("content") if block.get("type") == "tool_result" else None
                if isinstance(body, list):
                    body = "\n".join(b.get("text", "") for b in body if isinstance(b, dict))
                if body and len(body) >= 50:
                    out.append(body)
    return out


@pytest.mark.real_data
def test_real_tool_output_pasted_into_a_reply_is_not_corruption():
    replies = []
    for body in _tool_outputs():
        excerpt = "\n".join(body.splitlines()[:40])  # an agent pastes the part that matters, not all of it
        replies.append(f"The output:\n\n{excerpt}\n\nThat is the part that matters.")
        replies.append(f"The output:\n\n```\n{excerpt}\n```\n\nThat is the part that matters.")
    flagged = [
        v.evidence
        for text in replies
        if (
            v := in_session(
                Turn(
                    source="fixture",
                    session_id="tools",
                    turn_id="t",
                    source_file="-",
                    content=text,
                    finish_reason="stop",
                    completion_tokens=60,
                    tools_offered=True,
                )
            )
        ).corrupted
    ]
    print(f"\nreal tool output pasted: {len(replies)} replies, flagged {len(flagged)}")
    for ev in flagged:
        print("FALSE ALARM", (ev or "")[:160])
    assert len(replies) >= 40
    assert len(flagged) <= MAX_NEGATIVE_FLAG_RATE * len(replies)


# corruption of each kind, as it would continue a reply (docs/formats/TRANSCRIPTS.md, "Corrupted replies reported in public": stream-delta salad,
# a script switch, a looping sentence, leaked DSML, a stray </think>, a replacement character)
BESIDE = {
    "salad": "ins 3 Q / kv . ,, rt o e 7 ] ] x q zz . p l / 3Q ins ; ; k v 9 # w xx y . . 0 f ll q u j vv ins 3 Q / e e o ] ,",
    "switch": "The decode worker then waits for the 预填充服务器 to resend the cache before retrying.",
    "loop": "The prefill side never sent the cache. " * 12,
    "dsml": f'Let me check.\n\n<{d.DSML}function_calls>\n<{d.DSML}invoke name="read">\n'
    f'<{d.DSML}parameter name="path" string="true">a.py</{d.DSML}parameter>\n</{d.DSML}invoke>\n'
    f"</{d.DSML}function_calls>",
    "think": "</think>So that is the answer.",
    "replacement_char": "The loader ret\ufffdurns the dict.",
}


@pytest.mark.parametrize("kind", sorted(BESIDE))
def test_corruption_beside_quoted_material_is_found(kind):
    """Every hard negative with corruption appended to its prose is flagged: masking hides only the quote."""
    missed = []
    for c in NEGATIVES:
        # a script switch is judged against the user's language; these fixtures name a non-English user
        if kind == "switch" and c.turn.user_text:
            continue
        t = dataclasses.replace(c.turn, content=c.turn.content + "\n\n" + BESIDE[kind])
        if not in_session(t).corrupted:
            missed.append(c.name)
    assert not missed
