"""The escapers every renderer uses: one per kind of output, so no renderer keeps its own copy.

Text from logs, transcripts and file names is hostile. Each output kind has its own live syntax:

- terminal: control characters (ANSI CSI, OSC 8 hyperlinks, BEL) and bidi overrides are shown as
  visible `\\x1b` / `\\u202e` escapes (forensics.core.text.escape_control); rich tables get `Text`
  cells, never strings, so `[bold]` is not markup and `:b:` (as in `2001:db8:0:b:1::1`) is not an emoji.
- CSV: a text cell that begins with `=`, `+`, `-`, `@`, a tab or a CR (or their full-width forms) is
  prefixed with a single quote, as OWASP's CSV-injection guidance says, so a spreadsheet shows it as
  text instead of running it. Numeric columns are written as numbers: `-3.5` in a float column is a
  number, not a formula; the same text in a text column is quoted. The type of the column decides.
- Markdown: emphasis, code, link, image, HTML, table pipes, emoji shortcodes and block markers are
  backslash-escaped, so text renders as written and never as a link (javascript:, data: and
  vbscript: links cannot form: `[`, `]`, `(`, `<` are escaped and the scheme's colon too).
- HTML page and Perfetto trace: JSON with `<`, `>`, `&`, U+2028 and U+2029 as \\u escapes, so no
  string can close the `<script type="application/json">` element that carries it.
- SVG/PNG (matplotlib): terminal escaping plus math off (`$x$` is not mathtext); matplotlib's SVG
  writer escapes `<`, `>`, `&` and quotes itself.
"""

from __future__ import annotations

import json
import re

from forensics.core.text import CONTROL, escape_control

__all__ = [
    "CONTROL",
    "escape_control",
    "terminal",
    "rich_text",
    "csv_cell",
    "csv_frame",
    "markdown_text",
    "markdown_code",
    "json_in_html",
    "script_json",
]


def terminal(v) -> str:
    """Text for a terminal: control and bidi characters visible as escapes."""
    return escape_control("" if v is None else str(v))


def rich_text(v, style: str | None = None):
    """A rich `Text` of `v`: rich never reads markup or emoji codes inside a `Text`."""
    from rich.text import Text

    return Text(terminal(v), style=style or "")


# -- CSV --------------------------------------------------------------------------------------------

# OWASP "CSV Injection": = + - @ tab CR start a formula; full-width forms are read as the same by
# some spreadsheets' input methods
_FORMULA_START = re.compile(r"^[=+\-@\t\r\uff1d\uff0b\uff0d\uff20]")


def csv_cell(s: str | None) -> str | None:
    """A text cell safe to open in a spreadsheet: a leading formula character gets a `'` before it."""
    if s is None:
        return None
    s = escape_control(s)
    return "'" + s if _FORMULA_START.match(s) else s


def csv_frame(df):
    """`df` with every text column made safe by `csv_cell`; numeric columns stay numbers."""
    import polars as pl

    text = [c for c, t in df.schema.items() if t == pl.Utf8]
    if not text:
        return df
    return df.with_columns(pl.col(c).map_elements(csv_cell, return_dtype=pl.Utf8, skip_nulls=True) for c in text)


# -- Markdown ---------------------------------------------------------------------------------------

# CommonMark lets a backslash escape any ASCII punctuation. These start inline syntax: emphasis, code,
# links and images (`[`, `]`; `!` and `(` are inert without them), autolinks and HTML (`<`), GFM
# strikethrough and table pipes. `_` inside a word cannot open or close emphasis and stays bare, as
# does `&` that is not an entity, so `bucket_start` and `a & b` read as written in the source too.
_MD_INLINE = re.compile(r"([\\`*\[\]<>|~])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?\w+;)")
# colons to escape: the scheme of a link that runs code (`\:` keeps it text even where a renderer
# autolinks bare URLs) and an emoji shortcode (`:x:`, `:ok:`) on GitHub; times and the digit groups of
# an IPv6 address are left as they are
_MD_SCHEME = re.compile(r"(?i)\b(javascript|vbscript|data):")
_MD_SHORTCODE = re.compile(r":(?=[0-9+\-_]*[A-Za-z][\w+\-]*:)")
# at the start of a paragraph a heading, quote, list, rule or setext marker, or an ordered list's `1.`
_MD_BLOCK = re.compile(r"^(\s*)([#>+\-=*])")
_MD_ORDERED = re.compile(r"^(\s*\d+)([.)])")
_MD_INDENT = re.compile(r"^[ \t]+")
# stands for an escaped colon while the rest is escaped; escape_control has made any real NUL visible
_COLON = "\x00"


def markdown_text(v, inline: bool = False) -> str:
    """Text that renders in Markdown exactly as written, on one line; `inline`: not at a line's start (a table cell)."""
    s = escape_control("" if v is None else str(v))
    # a line break would end the table row or the paragraph the text sits in
    s = s.replace("\n", " ")
    s = _MD_SHORTCODE.sub(_COLON, _MD_SCHEME.sub(lambda m: m.group(1) + _COLON, s))
    s = _MD_INLINE.sub(_md_escape, s)
    if not inline:
        # mid-line (a table cell, after other text) block markers are text already; at a line's start
        # an indent would open a code block, so it is written as character references
        s = _MD_ORDERED.sub(r"\1\\\2", _MD_BLOCK.sub(r"\1\\\2", s))
        s = _MD_INDENT.sub(lambda m: "".join(f"&#{ord(c)};" for c in m.group()), s)
    return s.replace(_COLON, "\\:")


def _md_escape(m: re.Match) -> str:
    c, s, i = m.group(), m.string, m.start()
    # a `*` with space (or nothing) on both sides can neither open nor close emphasis: `raises *` stays
    if c == "*" and (i == 0 or s[i - 1].isspace()) and (i + 1 == len(s) or s[i + 1].isspace()):
        return c
    return "\\" + c


def markdown_code(v) -> str:
    """`v` as an inline code span: a fence longer than any run of backticks in it, so nothing is live."""
    s = escape_control("" if v is None else str(v)).replace("\n", " ")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


# -- JSON inside HTML -------------------------------------------------------------------------------


def json_in_html(json_text: str) -> str:
    """JSON text without `<`, `>`, `&`, U+2028, U+2029: they occur only inside strings, where \\u escapes mean the same."""
    return (
        json_text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def script_json(obj) -> str:
    """`obj` as JSON safe inside `<script type="application/json">`: nothing in it can close the element."""
    return json_in_html(json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
