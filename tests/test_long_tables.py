"""A table longer than render.CHUNK_ROWS is rendered a part at a time: the same text as whole."""

from __future__ import annotations

import io

import polars as pl
import pytest
from rich.text import Text

from forensics.reports import render
from forensics.reports.text import print_replies


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _replies(n: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "t_end": [f"2026-11-20 14:{i // 60 % 60:02d}:{i % 60:02d}" for i in range(n)],
            "corruption_class": ["clean", "parse_leak", "empty"] * (n // 3) + ["clean"] * (n % 3),
            "evidence": [("word " * (i % 17)) + f"«hit {i}»" * (i % 2) for i in range(n)],
            "session_id": [f"ses_{i % 7:04d}" for i in range(n)],
            "turn_id": [f"turn-{i}" for i in range(n)],
            "model": ["m"] * n,
        }
    )


def _print_all(df: pl.DataFrame, out) -> None:
    print_replies(df, out)
    render.table(df, out, title="a title")
    render.print_table(
        out,
        ["x", "y"],
        [[str(i), Text(f"v{i}", style="bold")] for i in range(len(df))],
        styles=["red" if i % 3 == 0 else None for i in range(len(df))],
        show_lines=False,
    )


@pytest.mark.parametrize("width", [None, 40, 200])
@pytest.mark.parametrize("terminal", [False, True])
def test_a_table_in_parts_is_the_table_whole(width, terminal, monkeypatch):
    df = _replies(23)
    monkeypatch.setattr(render.TABLE, "max_width", width)
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
    texts = []
    for rows in (10_000, 5, 1):
        monkeypatch.setattr(render, "CHUNK_ROWS", rows)
        out = _Terminal() if terminal else io.StringIO()
        _print_all(df, out)
        texts.append(out.getvalue())
    assert texts[0] == texts[1] == texts[2]
    assert "v22" in texts[0] and texts[0].count("a title") == 1


def test_rows_given_as_a_function_are_read_twice_and_never_kept(monkeypatch):
    monkeypatch.setattr(render, "CHUNK_ROWS", 4)
    calls = []

    def rows():
        calls.append(1)
        return ([str(i), "x" * (i % 5)] for i in range(10))

    out = io.StringIO()
    render.print_table(out, ["n", "x"], rows)
    assert len(calls) == 2
    whole = io.StringIO()
    render.print_table(whole, ["n", "x"], list(rows()))
    assert out.getvalue() == whole.getvalue()
