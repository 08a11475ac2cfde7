"""Fuzz every file parser for a while, outside CI: no crash, exact line accounting.

    python -m tests.fuzz --minutes 10

Inputs mix random bytes with fragments of each format (its own samples, cut and spliced), so the
fuzzer reaches the deep paths instead of stopping at the first unrecognised byte. Prints how many
inputs each parser took and exits 1 on the first failure, with the input that caused it.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.core.errors import ForensicsError
from forensics.parsers import PARSERS
from tests.helpers import parse_text

# folder parsers are fuzzed through their file forms elsewhere; they take no byte stream
FILE_PARSERS = [p for p in PARSERS if p.name != "outputs_dir"]


def _inputs(parser):
    pieces = [s.text for s in parser.samples] or ["x"]
    frag = st.sampled_from(pieces).flatmap(
        lambda t: st.tuples(st.integers(0, len(t)), st.integers(0, len(t))).map(lambda ab: t[min(ab) : max(ab)])
    )
    line = st.one_of(frag, st.text(max_size=60), st.sampled_from(pieces))
    text = st.lists(line, max_size=25).map("\n".join)
    as_bytes = text.map(lambda s: s.encode("utf-8", "surrogatepass"))
    return st.one_of(
        as_bytes,
        st.binary(max_size=2000),
        st.tuples(as_bytes, st.binary(max_size=40)).map(
            lambda ab: ab[0][: len(ab[0]) // 2] + ab[1] + ab[0][len(ab[0]) // 2 :]
        ),
    )


def check(parser, data: bytes) -> None:
    try:
        tables, ctx = parse_text(parser, data, name=f"fuzz.{parser.name}")
    except ForensicsError:
        return  # a clean, one-line refusal is an allowed outcome
    assert ctx.lines == ctx.parsed_lines + ctx.continuation_lines + ctx.unparsed_lines, (
        parser.name,
        ctx.lines,
        ctx.parsed_lines,
        ctx.continuation_lines,
        ctx.unparsed_lines,
    )
    unparsed = tables.get("unparsed")
    assert (0 if unparsed is None else unparsed.height) == ctx.unparsed_lines, parser.name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0, help="total budget, split over the parsers")
    args = ap.parse_args()
    budget = args.minutes * 60 / len(FILE_PARSERS)
    total = 0
    for parser in FILE_PARSERS:
        n = 0
        deadline = time.monotonic() + budget

        @settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(_inputs(parser))
        def run(data):
            nonlocal n
            if time.monotonic() > deadline:
                return
            n += 1
            check(parser, data)

        started = time.monotonic()
        try:
            while time.monotonic() < deadline:
                run()
        except Exception:
            traceback.print_exc()
            print(f"FAIL {parser.name} after {n} inputs")
            return 1
        total += n
        print(f"{parser.name:16} {n:8d} inputs in {time.monotonic() - started:6.1f} s, no crash, accounting exact")
    print(f"total {total} inputs in {args.minutes:g} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
