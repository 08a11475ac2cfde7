"""One command's view of a store: opened once, passed to every analysis, closed at the end.

A `Session` holds what every analysis of one command reads: the store, the clock offsets in force,
the verdicts the catalog joins into `turns` (`verdicts.ensure` runs when the catalog is first
entered), the one DuckDB connection of `forensics.catalog.connect`, and the snapshot set that
connection reads. The catalog is entered lazily, on the first query, so a command that only writes
(`clocks set`) or checks (`verify`) never builds it; once entered it is entered once: the snapshot
key, a hash over every input and all view SQL, is computed once per command.

Clock estimates read raw clocks: `raw()` is a second connection with no offsets, the same one
when none are in force.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import polars as pl

from forensics import catalog
from forensics.analysis import detectors, verdicts
from forensics.catalog import named as queries
from forensics.catalog.sql import run_sql
from forensics.store import Store


@dataclasses.dataclass(frozen=True)
class Limits:
    """How much a timeline export draws one by one (`rooms`, `marks`, `replies`; past these it draws
    counts per bucket), and the bytes a Perfetto trace may take (`trace_bytes`: Perfetto's UI cannot
    load traces near 2 GB)."""

    rooms: int = 20_000
    marks: int = 20_000
    replies: int = 20_000
    trace_bytes: int = 300_000_000


@dataclasses.dataclass
class Session:
    """The store, offsets, verdicts, connection and snapshot set of one command."""

    store: Store
    # the clock offsets the command corrects with; None: clocks.json's, read when first asked for
    given_offsets: dict[str, float] | None = None
    # reports compute and keep the derived views' snapshots; ad-hoc SQL reads them when they are there
    materialize: bool = True
    # entered around the derived views' computation (a spinner on a terminal), when there is one to do
    computing: Callable[[], contextlib.AbstractContextManager] | None = None
    thresholds: detectors.Thresholds | None = None
    verdicts: catalog.Verdicts | None = None
    limits: Limits = Limits()
    # the memory DuckDB may use (forensics.catalog.Memory: its defaults unless given)
    memory: catalog.Memory | None = None
    # the output is masked: the catalog's excerpt() keeps values whole, and analyses keep what an
    # excerpt was cut from, so that the masking masks whole values and cuts after it
    redact: bool = False
    # the SQL the command runs, when it is known before the catalog is entered: only the derived
    # views and macros it names are created (catalog.connect's `only`), the rest when a query asks
    only: str | None = None
    opened: catalog.Opened = dataclasses.field(default_factory=catalog.Opened)
    _con: duckdb.DuckDBPyConnection | None = dataclasses.field(default=None, repr=False)
    _raw: duckdb.DuckDBPyConnection | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def open(
        cls,
        store: Store | str | Path,
        offsets: dict[str, float] | None = None,
        materialize: bool = True,
        computing: Callable[[], contextlib.AbstractContextManager] | None = None,
        thresholds: detectors.Thresholds | None = None,
        verdicts: catalog.Verdicts | None = None,
        limits: Limits | None = None,
        redact: bool = False,
        memory: catalog.Memory | None = None,
    ) -> "Session":
        """A session over `store`, with the offsets of its clocks.json unless given; the store must
        exist once the catalog is entered."""
        store = store if isinstance(store, Store) else Store(store)
        return cls(
            store,
            given_offsets=None if offsets is None else dict(offsets),
            materialize=materialize,
            computing=computing,
            thresholds=thresholds,
            verdicts=verdicts,
            limits=limits or cls.limits,
            memory=memory,
            redact=redact,
        )

    @property
    def offsets(self) -> dict[str, float]:
        """The clock offsets in force for this command (host -> seconds its clock runs ahead)."""
        if self.given_offsets is None:
            self.given_offsets = self.store.clocks()
        return self.given_offsets

    # -- the catalog -----------------------------------------------------------------------------

    def ensure_verdicts(self) -> catalog.Verdicts:
        """The verdicts of the current detectors, computed for the inputs that lack them (once)."""
        if self.verdicts is None or self.verdicts.version != verdicts.version(self.thresholds):
            self.verdicts = verdicts.ensure(self.store, self.thresholds, self.verdicts)
        return self.verdicts

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The command's connection: the catalog with the offsets in force, entered on first use."""
        if self._con is None:
            self.store.require()
            self.ensure_verdicts()
            self._con = catalog.connect(
                self.store,
                self.offsets,
                self.materialize,
                self.verdicts,
                self.opened,
                self.computing,
                whole_excerpts=self.redact,
                memory=self.memory,
                only=self.only,
                lazy=True,
            )
        return self._con

    def raw(self) -> duckdb.DuckDBPyConnection:
        """A connection on raw clocks (what the logs say), for the clock estimates."""
        if not self.offsets:
            return self.con
        if self._raw is None:
            self.ensure_verdicts()
            self._raw = catalog.connect(self.store, {}, False, self.verdicts, memory=self.memory)
        return self._raw

    @property
    def snapshots(self) -> Path | None:
        """The snapshot set the connection's derived views read (None: computed from the tables)."""
        self.con
        return self.opened.snapshots

    def close(self) -> None:
        for c in (self._con, self._raw):
            if c is not None:
                c.close()
        self._con = self._raw = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- queries ---------------------------------------------------------------------------------

    def sql(self, text: str, params: dict | None = None, source: str | None = None) -> pl.DataFrame:
        """Read-only SQL (forensics.catalog.sql) on the command's connection."""
        return run_sql(self.store, text, params, con=self._for(lambda: text), source=source)

    def query(self, name: str, params: dict | None = None) -> pl.DataFrame:
        """A named query of queries/, its parameters bound."""
        return queries.run(self.store, name, params, con=self._for(lambda: queries.get(name).sql))

    def internal(self, name: str, params: dict | None = None) -> pl.DataFrame:
        """One of the toolkit's own queries (queries/_<name>.sql)."""
        con = self._for(lambda: queries.composed(queries.internal(name))[0])
        return queries.run_internal(self.store, name, params, con=con)

    def _for(self, text: Callable[[], str]) -> duckdb.DuckDBPyConnection:
        """The connection, holding what the SQL `text()` reads when the session was opened for other
        SQL (`only`) or left a macro to create when named (catalog.LAZY_MACROS)."""
        con = self.con
        catalog.provide(con, self.opened, text())
        return con

    def excerpts(self, rows: pl.DataFrame | list[dict]) -> list[detectors.Excerpt]:
        """What the evidence of `rows` (replies by source, session_id and turn_id) was cut from, when
        the output is masked (`redact`): their sessions assessed again. Nothing otherwise."""
        if not self.redact:
            return []
        key = ("source", "session_id", "turn_id")
        if isinstance(rows, pl.DataFrame):
            cols = [*key, *(["evidence"] if "evidence" in rows.columns else [])]
            rows = rows.select(cols).to_dicts() if set(key) <= set(rows.columns) else []
        # a reply without evidence (a clean one) has nothing cut
        wanted = {tuple(r.get(k) for k in key) for r in rows if r.get("evidence", "") is not None}
        if not wanted:
            return []
        pairs = sorted({f"{a}\0{b}" for a, b, _ in wanted if a is not None and b is not None})
        turns = self.sql(
            "SELECT * FROM raw_turns WHERE list_contains($pairs, source || chr(0) || session_id)", {"pairs": pairs}
        )
        found = verdicts.excerpts(turns, self.thresholds)
        return [found[k] for k in sorted(wanted, key=str) if k in found]

    def redaction_names(self) -> list[str]:
        """The host names a redaction of this store's output masks: its rows' hosts and clock offsets'."""
        return self.internal("_redact_hosts")["host"].to_list() + list(self.store.clocks())


@contextlib.contextmanager
def using(source: "Session | Store | str | Path", **kw) -> Iterator[Session]:
    """`source` itself when it is a session; else a session of that store, closed on the way out."""
    if isinstance(source, Session):
        yield source
        return
    with Session.open(source, **kw) as s:
        yield s
