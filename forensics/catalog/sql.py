"""Run SQL over a store, read-only. Values always travel as bound parameters, never inside the SQL text.

What SQL may do here (everything else is refused before any statement of the text runs):

- SELECT in all its forms (WITH, FROM-first, VALUES, PIVOT/UNPIVOT, DESCRIBE, SHOW, SUMMARIZE),
  EXPLAIN [ANALYZE] of one, CALL of a table function that only reads, the read-only PRAGMAs;
- SET VARIABLE / RESET VARIABLE;
- CREATE TEMP TABLE|VIEW|MACRO: it lives in this command's in-memory session and nowhere else, and
  may not take the name of a store table, view or function (a temporary `clock_offsets` would
  re-time every view, a temporary `coalesce` would change what they compute);
- read_parquet (and parquet_metadata, ...) on the exact files the store's views read: the same
  rows `raw_<table>` gives, so nothing new to protect. No other file, glob or URL.

Refused, each with a usage error naming the statement and the fix: CREATE/DROP/ALTER/COMMENT on the
store, INSERT/UPDATE/DELETE/MERGE/TRUNCATE, COPY and EXPORT/IMPORT DATABASE (results go to a file
only through `-o`), ATTACH/DETACH/USE (also ATTACH ':memory:': it could hold nothing CREATE TEMP
cannot), INSTALL/LOAD, SET/RESET/PRAGMA that change a setting, PREPARE/EXECUTE (use -p), transactions,
and the table functions that run SQL from a string (query, json_execute_serialized_sql) or change the
session (enable_logging, checkpoint, ...).

Two layers. This module reads each statement as DuckDB's own parser does (extract_statements,
json_serialize_sql, tokenize), so case, comments, several statements in one text and a COPY or
INSERT hidden in a CTE are seen as DuckDB sees them. The connection itself is locked
(forensics.catalog._lock): it opens no file but the store's and changes no setting. The lock alone is
not enough: DuckDB's allowed_paths admit writes as well as reads, so `COPY ... TO '<store file>'`
would pass it; the parse alone would trust this module to know every function, so a file function
it missed still meets the lock.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re

import duckdb
import polars as pl

from forensics.catalog import connect
from forensics.core.errors import QueryError, UsageError
from forensics.store import Store, checks

_READ_ONLY = "SQL over the store is read-only"
_TEMP_HELP = "CREATE TEMP TABLE name AS SELECT ... keeps a result for the rest of the same command"
_TO_FILE = ("results go to a file only through -o", 'forensics sql "SELECT ..." --format csv -o FILE')
_OTHER_DATA = (
    "SQL reads this store only",
    "ingest the other logs into a store (`forensics ingest DIR --store S`); `forensics compare` "
    "sets stores side by side",
)
_SETTINGS = (
    "settings are fixed while user SQL runs",
    "SET VARIABLE name = value works; memory and temp settings are the toolkit's",
)
# why each refused statement is refused, and what to do instead; keyed by its first word
_REFUSED = {
    "COPY": _TO_FILE,
    "EXPORT": _TO_FILE,
    "IMPORT": _TO_FILE,
    **dict.fromkeys(
        ("INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE"), (_READ_ONLY, "select what you need; " + _TEMP_HELP)
    ),
    **dict.fromkeys(
        ("CREATE", "DROP", "ALTER", "COMMENT"), (_READ_ONLY, "the store's views stay as they are; " + _TEMP_HELP)
    ),
    **dict.fromkeys(("ATTACH", "DETACH", "USE"), _OTHER_DATA),
    **dict.fromkeys(("INSTALL", "LOAD"), ("the extensions are fixed", "the views need only DuckDB's built-in ones")),
    **dict.fromkeys(("SET", "RESET"), _SETTINGS),
    "PRAGMA": ("only the read-only PRAGMAs are (show_tables, table_info, show, database_size, version)", _SETTINGS[1]),
    **dict.fromkeys(
        ("PREPARE", "EXECUTE", "DEALLOCATE"),
        ("the command binds the values", "pass -p NAME=VALUE and write $NAME in the SQL"),
    ),
    **dict.fromkeys(
        ("BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT"),
        (_READ_ONLY + ", there is nothing to commit", "leave the transaction statements out"),
    ),
    **dict.fromkeys(("VACUUM", "ANALYZE", "CHECKPOINT"), (_READ_ONLY, "leave it out")),
}
# words that start a statement which changes something: met anywhere in the text of a CREATE TEMP,
# SET VARIABLE or PIVOT (which DuckDB cannot serialise to a tree), they refuse it
_CHANGING = frozenset(_REFUSED) - {"END", "START", "ANALYZE"}
# the query nodes of a SELECT; any other (COPY_QUERY_NODE in a CTE, INSERT_QUERY_NODE, ...) writes
_SELECT_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
# table functions that only read: the store's files (DuckDB's lock refuses any other path), the
# catalogue, generators. Not here, so refused: query, query_table and json_execute_serialized_sql
# (SQL from a string), enable_logging, checkpoint, arrow_scan (a raw pointer), python_map_function, ...
_TABLE_FUNCTIONS = frozenset(
    """
    range generate_series unnest repeat repeat_row summary json_each json_tree glob
    read_parquet parquet_scan read_csv read_csv_auto read_json read_json_auto read_ndjson read_ndjson_auto
    read_json_objects read_json_objects_auto read_ndjson_objects read_text read_blob sniff_csv
    parquet_metadata parquet_schema parquet_file_metadata parquet_kv_metadata parquet_full_metadata
    duckdb_columns duckdb_constraints duckdb_databases duckdb_dependencies duckdb_functions duckdb_indexes
    duckdb_keywords duckdb_schemas duckdb_sequences duckdb_settings duckdb_tables duckdb_types duckdb_views
    duckdb_variables duckdb_memory duckdb_temporary_files duckdb_optimizers
    pragma_table_info pragma_show pragma_version pragma_platform pragma_database_size pragma_collations
    pragma_user_agent pragma_metadata_info pragma_storage_info
    pg_timezone_names icu_calendar_names test_all_types histogram histogram_values
""".split()
)
_READ_PRAGMAS = frozenset(
    """
    show_tables show_tables_expanded show_databases database_list table_info show database_size version
    platform functions collations user_agent metadata_info storage_info
""".split()
)
_KW, _ID, _COMMENT = duckdb.token_type.keyword, duckdb.token_type.identifier, duckdb.token_type.comment
_LOCKED = re.compile(r'Cannot change configuration option "([^"]+)"')
_NO_ACCESS = re.compile(r'Cannot access (?:file|directory) "([^"]+)"')
_PATH_TABLE = re.compile(r'Table with name (.+?) does not exist|capable of reading the file "([^"]+)"')


@dataclasses.dataclass(frozen=True)
class _Tok:
    pos: int
    text: str
    kind: object

    @property
    def word(self) -> str:
        return self.text.upper() if self.kind == _KW else ""

    @property
    def name(self) -> str:
        """The name an identifier or keyword token spells, quotes removed, in lower case."""
        if self.kind == _ID and self.text.startswith('"'):
            return self.text[1:-1].replace('""', '"').lower()
        return self.text.lower() if self.kind in (_KW, _ID) else ""


def _tokens(text: str) -> list[_Tok]:
    raw = duckdb.tokenize(text)
    ends = [p for p, _ in raw[1:]] + [len(text)]
    return [_Tok(p, text[p:e].strip(), k) for (p, k), e in zip(raw, ends) if k != _COMMENT]


@functools.cache
def _view_macros() -> frozenset[str]:
    """The table macros the derived views define (wedge_intervals, ...): toolkit SQL, callable."""
    from forensics.catalog import model

    return frozenset(n.lower() for n in model.macros())


def _kind(st) -> str:
    try:
        return st.type.name
    except ValueError:  # a statement this DuckDB parses but its Python API cannot name (UPDATE EXTENSIONS)
        return "UNKNOWN"


class _Gate:
    """Checks the statements of one text against what the module docstring allows."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self.temp_tables: set[str] = set()  # table macros this text creates, callable later in it
        self.shown = ""  # the statement being checked, on one line, for the error
        self._catalog: dict[str, set[str]] | None = None

    def catalog(self) -> dict[str, set[str]]:
        """Names in this session: relations and functions not temporary, and every table function."""
        if self._catalog is None:
            q = self.con.sql
            rel = q(
                "SELECT lower(table_name) FROM duckdb_tables() WHERE NOT temporary UNION "
                "SELECT lower(view_name) FROM duckdb_views() WHERE NOT temporary AND NOT internal"
            ).fetchall()
            funcs = q("SELECT DISTINCT lower(function_name), function_type FROM duckdb_functions()").fetchall()
            self._catalog = {
                "relations": {r for (r,) in rel},
                "functions": {f for f, _ in funcs},
                "table_functions": {f for f, t in funcs if t in ("table", "table_macro", "pragma")},
            }
        return self._catalog

    # -- whole text ---------------------------------------------------------------------------
    def check(self, sql: str) -> None:
        try:
            statements = duckdb.extract_statements(sql)
        except duckdb.ParserException:
            return  # a syntax error: running it reports it as DuckDB words it
        except (duckdb.Error, ValueError):
            self.shown = " ".join(sql.split())
            self.refuse(_tokens(sql), None)
        for st in statements:
            toks = _tokens(st.query)
            self.shown = " ".join(st.query[toks[0].pos :].split()) if toks else ""
            self.statement(st.query, _kind(st), toks)

    def refuse(
        self,
        toks: list[_Tok],
        kind: str | None,
        word: str | None = None,
        what: str | None = None,
        help: str | None = None,
    ):
        lead = toks[0].word if toks else ""
        if lead == "FORCE" and len(toks) > 1:
            word = word or f"FORCE {toks[1].word}"
        word = word or (
            lead
            if lead in _REFUSED
            else {"COPY_DATABASE": "COPY", "MERGE_INTO": "MERGE", "CREATE_FUNC": "CREATE", "VARIABLE_SET": "SET"}.get(
                kind or "", kind or lead or "this statement"
            )
        )
        words = word.split()
        key = words[1] if words[0] == "FORCE" and len(words) > 1 else words[0]
        reason, fix = _REFUSED.get(key, (_READ_ONLY, "`forensics tables` lists what you can query"))
        raise UsageError(what or f"{word} is not allowed: {reason}", text=self.shown, help=help or fix)

    # -- one statement ------------------------------------------------------------------------
    def statement(self, text: str, kind: str, toks: list[_Tok] | None = None) -> None:
        toks = _tokens(text) if toks is None else toks
        if not toks:
            return
        lead = toks[0].word
        if kind == "SELECT":
            return self.select(text, toks)
        if kind == "EXPLAIN":
            return self.explain(text, toks)
        if kind == "CALL" and lead == "CALL" and len(toks) > 1:
            return self.select("SELECT * FROM " + text[toks[1].pos :], toks)
        if kind == "PRAGMA" and lead == "PRAGMA" and len(toks) > 1:
            if toks[1].name in _READ_PRAGMAS:
                return self.scan(toks[2:], toks)
            self.refuse(toks, kind, word=f"PRAGMA {toks[1].text}")
        if kind == "SET" and lead in ("SET", "RESET", "PRAGMA") and len(toks) > 1:
            if toks[1].word == "VARIABLE" and lead != "PRAGMA":
                return self.scan(toks[2:], toks)
            k = 2 if toks[1].word in ("SESSION", "GLOBAL", "LOCAL") and len(toks) > 2 else 1
            self.refuse(toks, kind, what=f"{lead} {toks[k].text} is not allowed: {_SETTINGS[0]}", help=_SETTINGS[1])
        if kind == "CREATE" and lead == "CREATE":
            return self.create_temp(text, toks)
        if kind == "MULTI" and lead in ("PIVOT", "UNPIVOT", "PIVOT_WIDER", "PIVOT_LONGER"):
            return self.scan(toks[1:], toks)
        self.refuse(toks, kind)

    def select(self, text: str, toks: list[_Tok]) -> None:
        """A SELECT is read from its parse tree: every query node a SELECT, every table function one that reads."""
        try:
            (res,) = self.con.sql("SELECT json_serialize_sql($q)", params={"q": text}).fetchall()[0]
            tree = json.loads(res)
        except (duckdb.Error, RecursionError, ValueError):
            tree = {"error": True}
        if tree.get("error") or len(tree.get("statements", [])) != 1:
            # DuckDB parsed it but cannot serialise it: judge it by its words, which refuses more
            return self.scan(toks[1:], toks)
        stack = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
                continue
            if not isinstance(node, dict):
                continue
            t = node.get("type")
            if isinstance(t, str) and t.endswith("_NODE") and t not in _SELECT_NODES:
                self.refuse(toks, None, word=t.removesuffix("_NODE").removesuffix("_QUERY"))
            if t == "TABLE_FUNCTION":
                self.table_function(str((node.get("function") or {}).get("function_name", "")), toks)
            if t == "BASE_TABLE" and re.search(r"[/\\.:]", str(node.get("table_name", ""))):
                self.file(str(node["table_name"]), toks)
            stack.extend(node.values())

    def explain(self, text: str, toks: list[_Tok]) -> None:
        i = 1
        if i < len(toks) and toks[i].word in ("ANALYZE", "ANALYSE"):
            i += 1
        if i < len(toks) and toks[i].text == "(":
            depth = 0
            for j in range(i, len(toks)):
                depth += {"(": 1, ")": -1}.get(toks[j].text, 0)
                if depth == 0:
                    i = j + 1
                    break
        if i >= len(toks):
            return
        inner = text[toks[i].pos :]
        try:
            (st,) = duckdb.extract_statements(inner)
        except (duckdb.Error, ValueError):
            self.refuse(toks[i:], None)
        if _kind(st) not in ("SELECT", "MULTI"):
            self.refuse(toks[i:], _kind(st))
        self.statement(st.query, _kind(st))

    def create_temp(self, text: str, toks: list[_Tok]) -> None:
        words = [t.word for t in toks[:8]]
        i = 3 if words[1:3] == ["OR", "REPLACE"] else 1
        if (
            i + 2 >= len(toks)
            or words[i] not in ("TEMP", "TEMPORARY")
            or words[i + 1] not in ("TABLE", "VIEW", "MACRO", "FUNCTION")
        ):
            self.refuse(toks, "CREATE")
        obj = words[i + 1]
        j = i + 2
        if [t.word for t in toks[j : j + 3]] == ["IF", "NOT", "EXISTS"]:
            j += 3
        if j >= len(toks):
            self.refuse(toks, "CREATE")
        name = toks[j].name
        if j + 1 < len(toks) and toks[j + 1].text == ".":
            self.refuse(
                toks,
                None,
                what="a temporary object takes a plain name",
                help="write CREATE TEMP " + obj + " name ..., without a schema or database",
            )
        cat = self.catalog()
        taken = cat["functions"] if obj in ("MACRO", "FUNCTION") else cat["relations"]
        if name in taken:
            kind = "function" if obj in ("MACRO", "FUNCTION") else "store table or view"
            self.refuse(
                toks,
                None,
                what=f"CREATE TEMP {obj} {toks[j].text} is not allowed: {name} is a {kind}",
                help=f"pick another name: a temporary {name} would change what the store's views return",
            )
        rest = toks[j + 1 :]
        body = self._after_as(rest) if obj in ("TABLE", "VIEW") else None
        if body is not None:
            try:
                (st,) = duckdb.extract_statements(text[body.pos :])
                if _kind(st) == "SELECT":
                    return self.select(st.query, toks)
            except (duckdb.Error, ValueError):
                pass
        self.scan(rest, toks)
        if obj in ("MACRO", "FUNCTION") and any(a.word == "AS" and b.word == "TABLE" for a, b in zip(rest, rest[1:])):
            self.temp_tables.add(name)

    @staticmethod
    def _after_as(toks: list[_Tok]) -> _Tok | None:
        depth = 0
        for a, b in zip(toks, toks[1:]):
            depth += {"(": 1, ")": -1}.get(a.text, 0)
            if depth == 0 and a.word == "AS":
                return b
        return None

    def scan(self, rest: list[_Tok], toks: list[_Tok]) -> None:
        """Judge text DuckDB cannot serialise by its words: no statement that changes, no function outside the list."""
        for t in rest:
            if t.word in _CHANGING:
                self.refuse(toks, None, word=t.word)
            if t.name and t.name in self.catalog()["table_functions"]:
                self.table_function(t.name, toks)

    def table_function(self, name: str, toks: list[_Tok]) -> None:
        name = name.lower()
        if name in _TABLE_FUNCTIONS or name in _READ_PRAGMAS or name in self.temp_tables or name in _view_macros():
            return
        self.refuse(
            toks,
            None,
            what=f"table function {name}() is not allowed: {_READ_ONLY}",
            help="the table functions that only read are allowed (range, unnest, duckdb_tables, "
            "read_parquet of the store's own files, ...); write the query itself, not SQL in a string",
        )

    def file(self, path: str, toks: list[_Tok]) -> None:
        self.refuse(
            toks,
            None,
            what=f"reading {path} is not allowed: SQL reads only the store's tables",
            help="ingest the file first (`forensics ingest PATH`), then query its table; `forensics tables` lists them",
        )


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise UsageError unless every statement of `sql` only reads (see the module docstring)."""
    _Gate(con).check(sql)


def _usage_from(e: duckdb.Error, shown: str) -> UsageError | None:
    """DuckDB's refusals under the connection lock, in the toolkit's words."""
    msg = str(e)
    m = _NO_ACCESS.search(msg)
    if isinstance(e, duckdb.PermissionException) and m:
        return UsageError(
            f"reading {m.group(1)} is not allowed: SQL reads only the store's own files",
            text=shown,
            help="ingest it first (`forensics ingest PATH`), then query its table; `forensics tables` lists them",
        )
    if isinstance(e, duckdb.PermissionException):
        return UsageError(
            "this is not allowed: SQL over the store reads the store and nothing else",
            text=shown,
            help="`forensics tables` lists what you can query",
        )
    m = _PATH_TABLE.search(msg)
    path = m and (m.group(1) or m.group(2))
    if path and re.search(r"[/\\.:]", path):  # a file named where a table goes
        return UsageError(
            f"reading {path} is not allowed: SQL reads only the store's tables",
            text=shown,
            help="ingest it first (`forensics ingest PATH`), then query its table; `forensics tables` lists them",
        )
    m = _LOCKED.search(msg)
    if m:
        reason, fix = _SETTINGS
        return UsageError(f"changing the setting {m.group(1)} is not allowed: {reason}", text=shown, help=fix)
    if "but it exists in the" in msg and "extension" in msg:
        return UsageError(
            msg.strip().splitlines()[0],
            text=shown,
            help="the extensions are fixed: the views need only DuckDB's built-in ones",
        )
    return None


def run_sql(
    store: Store,
    sql: str,
    params: dict | None = None,
    offsets: dict[str, float] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    materialize: bool = False,
    source: str | None = None,
) -> pl.DataFrame:
    """Run `sql` with `params` bound; on a connection of its own unless `con` is given.

    The SQL may only read (see the module docstring); `materialize` caches the derived views for
    the next run (see catalog.connect), before the connection is locked. `source` names the file the
    SQL came from, for the `-->` line of an error.
    """
    own = con is None
    if own:
        con = connect(store.require(), offsets, materialize=materialize, only=sql)
    shown = next((ln.strip() for ln in sql.strip().splitlines() if ln.strip() and not ln.strip().startswith("--")), "")
    try:
        check_read_only(con, sql)
        rel = con.sql(sql, params=params or None)
        if rel is None:  # a statement without a result
            return pl.DataFrame()
        return pl.from_arrow(rel.to_arrow_table())
    except duckdb.Error as e:
        usage = _usage_from(e, shown)
        if usage is not None:
            raise usage from None
        damage = checks.explain_read_error(store, e)
        if damage is not None:
            raise damage from None
        raise query_error(e, sql, shown, source) from None
    finally:
        if own:
            con.close()


_LINE = re.compile(r"^LINE (\d+): ?(.*)$")
_MISSING_PARAMS = re.compile(r"Values were not provided for the following (?:prepared statement )?parameters: (.+)")
# a hint DuckDB lists one item a line under (candidate functions): this many are kept
_HINT_ITEMS = 3
_TABLES_HELP = "`forensics tables` lists the tables and views"


def query_error(e: duckdb.Error, sql: str, shown: str, source: str | None = None) -> QueryError:
    """DuckDB's error with its hints (`Did you mean "replies"?`, candidate bindings) on the error line,
    the line it points at, and a help line that fits the kind of error."""
    lines = str(e).strip().splitlines()
    what, hints, items, at = lines[0].strip(), [], [], None
    for ln in lines[1:]:
        m = _LINE.match(ln)
        if m:
            at = int(m.group(1)), m.group(2)
        elif ln.startswith("\t") and hints:
            items.append(ln.strip())
        elif ln.strip() and not set(ln.strip()) <= {"^"}:
            hints.append(ln.strip())
    if items:
        more = len(items) - _HINT_ITEMS
        hints[-1] = hints[-1] + " " + "; ".join(items[:_HINT_ITEMS]) + (f"; +{more} more" if more > 0 else "")
    if hints:
        what = what + " " + " ".join(hints)
    file, line, text = source, None, shown
    if at is not None:
        line, text = at
        if source is None and "\n" in sql.strip():
            file = "SQL"
        elif source is None:
            line = None
    return QueryError(what, file=file, line=line, text=text, help=_help_for(e, what))


def _help_for(e: duckdb.Error, what: str) -> str:
    if isinstance(e, duckdb.ParserException):
        return (
            "the SQL is not valid DuckDB SQL near the text shown; `forensics query show NAME` prints "
            "working queries (`forensics query list` names them)"
        )
    m = _MISSING_PARAMS.search(what)
    if m:
        names = [n.strip() for n in m.group(1).split(",")]
        return "bind each with -p: " + " ".join(f"-p {n}=VALUE" for n in names)
    if isinstance(e, duckdb.CatalogException):
        if re.search(r"\b(Table|View)\b", what):
            return _TABLES_HELP
        if "Function" in what:
            return "SELECT function_name FROM duckdb_functions() lists the functions"
        return _TABLES_HELP
    if isinstance(e, duckdb.BinderException) and "not found in FROM clause" in what:
        return "`forensics tables TABLE` lists a table's columns"
    if isinstance(e, (duckdb.BinderException, duckdb.ConversionException)) and re.search(r"cast|convert", what, re.I):
        return (
            "cast with CAST(x AS TYPE) or x::TYPE; -p binds a whole number as an integer, a decimal as a "
            "double, and -p NAME:str=VALUE as text"
        )
    if isinstance(e, duckdb.BinderException):
        return "`forensics tables TABLE` lists a table's columns and their types"
    return "the query ran but DuckDB stopped it; the message says why"
