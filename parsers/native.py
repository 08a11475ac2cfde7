"""The native scanner (parsers/_fastlog.c) from Python: its buffers as polars frames.

The extension is built at install time when a C compiler is there (setup.py marks it optional,
unless FORENSICS_REQUIRE_NATIVE=1, as in CI). Without it, or with FORENSICS_NATIVE=0, every line
takes the polars path, which gives the same tables (tests/test_native.py), only slower; whether
it is there, and why not, is `forensics.core.native`'s to say.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from forensics.core import native
from forensics.core.schema import RANKS
from forensics.parsers.lines import RawBlock, with_flags

# None without a compiler at install time: the polars path does it all
_fastlog = native.built("_fastlog")


def enabled() -> bool:
    """Whether server logs take the scanner here (`forensics.core.native.why_not` says why not)."""
    return native.enabled("_fastlog")


def config(
    keys: list[tuple[str, int, int, str]],
    types: str,
    ranks: tuple[str, ...],
    literals: list[tuple[str, int]],
    leaders: list[tuple[str, int]],
):
    """The tables `scan` matches by, as one immutable object (see `Config` in parsers/_fastlog.c):
    stats keys as (key, column on the prefill side, on the decode side, -1 none; graph backend or
    ""), one type letter per column, the rank tags, (literal, flags) and (request leader, kind)."""
    return _fastlog.Config(
        [(k.encode(), p, d, g.encode()) for k, p, d, g in keys],
        types.encode(),
        [r.encode() for r in ranks],
        [(x.encode(), f) for x, f in literals],
        [(x.encode(), k) for x, k in leaders],
    )


def scan(config, raw: RawBlock, year: int) -> dict:
    """The scanner's buffers for one block (see `scan` in parsers/_fastlog.c)."""
    return _fastlog.scan(config, raw.body, raw.line_no, raw.lines, year, not raw.unterminated)


def _str(d: dict, name: str, n: int):
    import pyarrow as pa

    return pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(d[f"{name}.off"]), pa.py_buffer(d[f"{name}.data"]), pa.py_buffer(d[f"{name}.valid"])
    )


def _prim(d: dict, name: str, n: int, typ):
    import pyarrow as pa

    return pa.Array.from_buffers(typ, n, [pa.py_buffer(d[f"{name}.valid"]), pa.py_buffer(d[name])])


def rest_frame(d: dict, raw: RawBlock) -> pl.DataFrame:
    """The lines the scanner left, as `parsers.lines.frame` gives them, and `_brk` (line above taken)."""
    n = d["rest.n"]
    df = pl.DataFrame(
        {
            "line_no": np.frombuffer(d["rest.line_no"], dtype=np.int64),
            "line": pl.from_arrow(_str(d, "rest.line", n)).cast(pl.Utf8),
        }
    )
    return with_flags(df, raw).with_columns(_brk=pl.Series(np.frombuffer(d["rest.brk"], dtype=np.uint8) > 0))


def sg_messages(d: dict):
    """The messages of the lines `sglang_frame` holds, alone (an Arrow array over the buffers)."""
    return _str(d, "sg.message", d["sg.n"])


def sglang_frame(d: dict) -> pl.DataFrame:
    """Other lines with a plain sglang prefix: line_no, `_brk`, message (end stripped), ts_raw,
    naive `local` time, CRI time `cri`, the rank tags, and for a canonical access message its
    `_acc_peer`, `_acc_method`, `_acc_path`, `_acc_status`, for a request log line its `_req_*`
    fields (`_req_kind` 1 received, 2 finished)."""
    import pyarrow as pa

    n = d["sg.n"]
    cols = {
        "line_no": pa.array(np.frombuffer(d["sg.line_no"], dtype=np.int64)),
        "_brk": pa.array(np.frombuffer(d["sg.brk"], dtype=np.uint8) > 0),
        "message": _str(d, "sg.message", n),
        "ts_raw": _str(d, "sg.ts_raw", n),
        "local": pa.array(np.frombuffer(d["sg.local_us"], dtype=np.int64)).cast(pa.timestamp("us")),
        "cri": _str(d, "sg.cri", n),
    }
    for i, name in enumerate(("_acc_peer", "_acc_method", "_acc_path", "_acc_status")):
        cols[name] = _str(d, f"sg.acc{i}", n)
    kind = np.frombuffer(d["sg.req_kind"], dtype=np.uint8)
    cols["_req_kind"] = pa.array(kind, mask=kind == 0)
    for name, key in (("_req_rid", "rid"), ("_req_finish", "fin"), ("_req_status", "status")):
        cols[name] = _str(d, f"sg.{key}", n)
    for i, name in enumerate(("_req_room", "_req_prompt", "_req_completion", "_req_cached", "_req_e2e", "_req_rank")):
        cols[name] = _prim(d, f"sg.num{i}", n, pa.float64() if name == "_req_e2e" else pa.int64())
    for i, r in enumerate(RANKS):
        cols[r] = _prim(d, f"sg.rank{i}", n, pa.int32())
    return pl.from_arrow(pa.table(cols))


def stats_frame(d: dict, columns: list[tuple[str, str]]) -> pl.DataFrame:
    """The stats rows the scanner took: raw fields (`local` is naive local time, `cri` the CRI
    record's time or null) and the typed value of every (column, type) of `columns`."""
    import pyarrow as pa

    n = d["st.n"]
    typ = {"int": pa.int64(), "float": pa.float64(), "pct": pa.float64(), "bool": pa.bool_()}
    cols = {
        "line_no": pa.array(np.frombuffer(d["st.line_no"], dtype=np.int64)),
        "local": pa.array(np.frombuffer(d["st.local_us"], dtype=np.int64)).cast(pa.timestamp("us")),
        "kind": _str(d, "st.kind", n),
        "ts_raw": _str(d, "st.ts_raw", n),
        "cri": _str(d, "st.cri", n),
        "graph_backend": _str(d, "st.graph", n),
    }
    for i, r in enumerate(RANKS):
        cols[r] = _prim(d, f"st.rank{i}", n, pa.int32())
    for i, (name, t) in enumerate(columns):
        # a column no row has comes without buffers
        cols[name] = pa.nulls(n, typ[t]) if d[f"st.col{i}"] is None else _prim(d, f"st.col{i}", n, typ[t])
    entries = pa.StructArray.from_arrays(
        [_str(d, "st.extra_key", d["st.extra_n"]), _str(d, "st.extra_value", d["st.extra_n"])], names=["key", "value"]
    )
    cols["extra"] = pa.ListArray.from_arrays(pa.array(np.frombuffer(d["st.extra_off"], dtype=np.int32)), entries)
    return pl.from_arrow(pa.table(cols))
