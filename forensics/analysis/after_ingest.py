"""What follows an ingest, once its inputs are committed: the clock offsets given with it, the
verdicts of the turns it stored, and the store summary (which computes the derived views, so that
the first report after an ingest is quick). `forensics ingest` runs it; so can a library caller.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable

from forensics.analysis import coverage, summary, verdicts
from forensics.analysis.models import Summary
from forensics.analysis.other_dump import OtherDump, judge
from forensics.analysis.session import Session
from forensics.ingest import stop
from forensics.ingest.records import FileResult
from forensics.store import Store


@dataclasses.dataclass
class AfterIngest:
    results: list[FileResult]
    summary: Summary | None = None  # the store summary's model; None when nothing was read, or it failed
    summary_error: Exception | None = None  # what the summary failed with: the inputs stay committed
    # the store held another dump's inputs before this ingest (forensics/analysis/other_dump.py)
    other_dump: OtherDump | None = None

    @property
    def read_any(self) -> bool:
        """Whether an input was read (ingested, already in the store, or failed), not all skipped."""
        return any(r.status in ("ingested", "duplicate", "failed") for r in self.results)


def finish(
    store: Store,
    results: list[FileResult],
    offsets: dict[str, float] | None = None,
    shown: Callable[[list[FileResult]], None] | None = None,
    computing: Callable[[Store], contextlib.AbstractContextManager] | None = None,
) -> AfterIngest:
    """The offsets recorded and the verdicts computed, then `shown(results)`, then the summary built
    inside `computing(store)` unless no input was read. A failing summary is returned, not raised.
    `computing(store)` is entered only when the derived views are to be computed.

    A signal stops any of it (`stop.Interrupted`, its phase 'verdicts' or 'derived'; at once with
    the `on_stop` of the caller's `stop.handling`): the inputs are committed, and what is not yet
    computed is computed by the next report."""
    with stop.handling():
        stop.finishing("verdicts", len(results))
        with stop.committing():  # offsets given with the ingest are recorded whole or not at all
            for host, seconds in (offsets or {}).items():
                store.set_clock(host, seconds)
        judged = verdicts.ensure(store)
        stop.finishing("derived", len(results))
        if shown is not None:
            name_engines(store, results, judged)
            shown(results)
        out = AfterIngest(results)
        if not out.read_any:
            return out
        out.other_dump = _other_dump(store, results)
        try:
            spinner = (lambda: computing(store)) if computing else None
            with Session.open(store, computing=spinner, verdicts=judged) as session:
                out.summary = summary.build(session)
        except Exception as e:  # noqa: BLE001 - what was ingested is committed: the caller says it
            if stop.requested():
                raise stop.interrupted() from None  # a query the signal cut short: a stop, not a failure
            out.summary_error = e
        if stop.requested():
            raise stop.interrupted()  # the signal came in a step that caught it
    return out


def _other_dump(store: Store, results: list[FileResult]) -> OtherDump | None:
    """The note on another dump the store held, or None; a note only, so what fails it says nothing."""
    try:
        return judge(store, results)
    except Exception:  # noqa: BLE001 - the inputs are committed; `forensics verify` names a damaged store
        if stop.requested():
            raise stop.interrupted() from None
        return None


def name_engines(store: Store, results: list[FileResult], judged=None) -> None:
    """A note on each input another engine wrote (vLLM, TensorRT-LLM, ...), from its unparsed lines:
    'vLLM log: not read beyond plain lines; 100% unparsed' (forensics.analysis.coverage). What it
    cannot tell is left unsaid: the inputs are committed, and the reports say it again."""
    partly = {r.path: r for r in results if r.status in ("ingested", "failed") and r.unparsed}
    if not partly:
        return
    try:
        with Session.open(store, materialize=False, verdicts=judged) as s:
            cov = coverage.build(s.con)
    except Exception:  # noqa: BLE001 - a note only; the summary after it reports a broken store
        if stop.requested():
            raise stop.interrupted() from None
        return
    for i in cov["inputs"]:
        r = partly.get(i["path"])
        if r is not None and i["engine"]:
            r.notes.append(i["read"])
