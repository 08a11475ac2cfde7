"""Hive partitions: where a row of a base table lies, and how its part files are named.

    <store>/tables/<table>/host=<host>/date=<YYYY-MM-DD>/part-<key>-<tag>.parquet

`host` is the row's host column, `date` the UTC date of the table's time column (`DATE_COLUMN`).
Both live in the path only: the files hold every other column of the schema, and readers with Hive
partitioning (DuckDB, polars, pyarrow.dataset, Spark, Trino) add them back from the path. A table
without a host column (turns, unparsed) or a row whose host or time is NULL goes to
`__HIVE_DEFAULT_PARTITION__`, which every one of those readers reads as NULL (an empty host, which
a Hive path cannot hold, too). Values are escaped as Hive and Spark escape them (`%XX` for `/`,
`=`, `%`, `:` and the rest of their list, control characters included); other characters, UTF-8
among them, stay as they are, since Spark decodes `%XX` one byte to one character.

`key` is the input's store key (inputs/<key>.json commits it, forensics/store/commits.py); `tag`
orders an input's parts of one partition (the part number the writer gave, `NNNNN`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

TABLES = "tables"
DEFAULT = "__HIVE_DEFAULT_PARTITION__"
KEYS = ("host", "date")
# the column whose UTC date partitions a table without a `ts` column (None: no date)
DATE_COLUMN = {"files": "first_ts", "turns": "t_start", "unparsed": None, "wedge_streams": "t_a"}

# Hive's and Spark's escapePathName list (FileUtils / ExternalCatalogUtils), plus every control character
_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^") | frozenset(chr(c) for c in range(0x20))


def escape(value: str | None) -> str:
    """A partition value as a path segment (NULL and '' are the default partition)."""
    if value is None or value == "":
        return DEFAULT
    out = "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)
    return "%5F" + out[1:] if out == DEFAULT else out  # the literal name, not the NULL it stands for


def unescape(segment: str) -> str | None:
    if segment == DEFAULT:
        return None
    out, i = [], 0
    while i < len(segment):
        c = segment[i]
        if c == "%" and _is_hex(segment[i + 1 : i + 3]):
            out.append(chr(int(segment[i + 1 : i + 3], 16)))
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def date_column(table: str, names) -> str | None:
    if "ts" in names:
        return "ts"
    return DATE_COLUMN.get(table)


def partition_dir(table: str, host: str | None, date: str | None) -> str:
    return f"{table}/host={escape(host)}/date={date or DEFAULT}"


def part_name(key: str, tag: str) -> str:
    return f"part-{key}-{tag}.parquet"


def key_of(path: str | os.PathLike) -> str:
    """The store key of a part file: its name's for this layout, its folder's for the one before."""
    name = os.path.basename(os.fspath(path))
    if name.startswith("part-") and name.count("-") >= 2:
        return name.split("-")[1]
    return os.path.basename(os.path.dirname(os.fspath(path)))


def table_of(rel: str) -> str:
    return rel.split("/", 1)[0]


def values_of(path: str | os.PathLike) -> dict[str, str | None]:
    """The partition values of a part from its last two folders ({} outside a partition)."""
    parts = os.fspath(path).replace(os.sep, "/").split("/")
    out = {}
    for seg in parts[-3:-1]:
        k, eq, v = seg.partition("=")
        if eq and k in KEYS:
            out[k] = unescape(v)
    return out


def staged_rel(final_rel: str) -> str:
    """Where a part waits in its input's folder in .tmp: its partition folders, then `<tag>.parquet`."""
    head, name = final_rel.rsplit("/", 1)
    return f"{head}/{name.split('-', 2)[2]}"


def final_rel(staged: str, key: str) -> str:
    head, name = staged.rsplit("/", 1)
    return f"{head}/{part_name(key, name.removesuffix('.parquet'))}"


def split(table: str, df: pl.DataFrame) -> list[tuple[str | None, str | None, pl.DataFrame]]:
    """`df` (in the schema's shape) by partition, in first-seen order, without the host column.

    One host and one date, the common case (a server log's batch), costs two comparisons."""
    has_host = "host" in df.columns
    dcol = date_column(table, df.columns)
    host = df.get_column("host") if has_host else None
    if host is not None and (host == "").any():  # a Hive path has no empty value: '' is NULL's partition
        host = host.set(host == "", None)
    day = df.get_column(dcol).dt.date() if dcol else None
    one_host = host is None or (host.null_count() in (0, len(host)) and (host.null_count() or host.n_unique() == 1))
    one_day = day is None or day.null_count() == len(day) or (day.null_count() == 0 and day.min() == day.max())
    rest = df.drop("host") if has_host else df
    if one_host and one_day:
        h = host[0] if host is not None and len(host) else None
        d = day[0] if day is not None and len(day) else None
        return [(h, d.isoformat() if d is not None else None, rest)]
    keys = []
    frame = rest
    if host is not None:
        frame = frame.with_columns(host.alias("__host"))
        keys.append("__host")
    if day is not None:
        frame = frame.with_columns(day.alias("__date"))
        keys.append("__date")
    out = []
    for k, sub in frame.partition_by(keys, maintain_order=True, as_dict=True).items():
        kv = dict(zip(keys, k))
        d = kv.get("__date")
        out.append((kv.get("__host"), d.isoformat() if d is not None else None, sub.drop(keys)))
    return out
