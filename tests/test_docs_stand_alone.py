"""The documentation stands alone: a clone of the repository has everything its text points at.

- No tracked file points outside the repository at the reference folder the formats were first
  written from, by its path or by its section numbers: the input formats are documented in
  docs/formats/, and code cites those files. Only tests/conftest.py (the real excerpts it reads when
  they are present) and tools/digest.py (the same inputs) may name that folder.
- Every `docs/...` path cited anywhere exists, and every section cited as
  `docs/formats/<FILE>.md, "<title>"` is a heading of that file.
- Every path a README or ARCHITECTURE.md gives in backticks exists.
- Every module (each .py under forensics/, parsers/, queries/ and tools/, and the C files of
  parsers/) is named in ARCHITECTURE.md, so a new module comes with its line there.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess

import pytest

from tests.conftest import ROOT

# What points outside: the reference folder by its relative path, its formats folder, the folder's
# name as a path part (building the path by hand), and section numbers of the format notes, cited
# with their file name or bare. The folder's name and the section sign are assembled here so that
# this file does not match its own patterns.
REFERENCE, SECTION = "sha" + "red", chr(0xA7)
OUTSIDE = re.compile(
    "|".join(
        (
            r"\.\./" + REFERENCE + r"\b",
            r"\b" + REFERENCE + r"/formats\b",
            r"[\"']" + REFERENCE + r"[\"']",
            r"\b(?:SGLANG|NIXL|TRANSCRIPTS|TRANSFER_TRACE)\.md,? " + SECTION,
            r"\(" + SECTION + r"[0-9]",
            r"^\s*(?:#|--|\*)?\s*" + SECTION + r"[0-9]",
        )
    )
)
# Readers of the real excerpts, which are inputs and not citations.
MAY_NAME_REFERENCE = {"tests/conftest.py", "tools/digest.py"}

DOC_PATH = re.compile(r"\bdocs/[\w./-]*[\w/]")
CITATION = re.compile(r"\b(docs/formats/[A-Z_]+\.md)[,:]\s*((?:\\?\"[^\"\\\n]+\\?\"(?:\s*(?:,|;|and)\s*(?=\\?\"))?)+)")
TITLE = re.compile(r"\\?\"([^\"\\\n]+)\\?\"")
BACKTICKED = re.compile(r"`((?:forensics|parsers|queries|tools|tests|bench|sample_logs|docs)/[^`\s]*)`")
MODULES = ("forensics/*.py", "parsers/*.py", "parsers/*.c", "queries/*.py", "tools/*.py")


def _tracked() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        pytest.skip("not a git checkout: the tracked files are unknown")
    files = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    return [p for p in files if (ROOT / p).is_file()]


def _text(path: str) -> str:
    return (ROOT / path).read_bytes().decode("utf-8", "replace")


def _excluded(path: str) -> bool:
    return path in MAY_NAME_REFERENCE


def _lines_matching(path: str, pattern: re.Pattern) -> list[str]:
    return [
        f"{path}:{i}: {line.strip()[:160]}"
        for i, line in enumerate(_text(path).splitlines(), 1)
        if pattern.search(line)
    ]


def test_no_file_points_outside_the_repository():
    found = [hit for p in _tracked() if not _excluded(p) for hit in _lines_matching(p, OUTSIDE)]
    assert not found, 'cite docs/formats/<FILE>.md, "<section title>" instead:\n' + "\n".join(found)


def _headings(doc: str) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"(?m)^#{2,4} (.+)$", _text(doc))}


def test_every_cited_doc_and_section_exists():
    missing, sections = [], []
    for p in _tracked():
        text = _text(p)
        for m in DOC_PATH.finditer(text):
            cited = m.group().rstrip("./")
            if not (ROOT / cited).exists():
                missing.append(f"{p}: {cited}")
        for m in CITATION.finditer(text):
            doc = m.group(1)
            if not (ROOT / doc).is_file():
                continue  # reported above
            have = _headings(doc)
            sections += [f'{p}: {doc}, "{t}"' for t in TITLE.findall(m.group(2)) if t.strip() not in have]
    assert not missing, "cited paths that do not exist:\n" + "\n".join(missing)
    assert not sections, "cited sections that are not headings of the file:\n" + "\n".join(sections)


def test_citations_are_found():
    # the checks above read citations in the shapes the code writes them; a pattern that matched
    # nothing would pass for the wrong reason
    text = _text("parsers/server_log/grammar.py") + _text("forensics/core/schema.py")
    titles = [t for m in CITATION.finditer(text) for t in TITLE.findall(m.group(2))]
    assert "Failure reasons" in titles and "Status codes" in titles, titles


def _output(path: str) -> bool:
    """A path the repository ignores: what a command writes (`bench/out/`), not a file it holds."""
    return subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", path], timeout=60).returncode == 0


@pytest.mark.parametrize("doc", ["README.md", "ARCHITECTURE.md", "sample_logs/README.md", "docs/formats/README.md"])
def test_paths_in_backticks_exist(doc):
    stale = [
        path
        for path in BACKTICKED.findall(_text(doc))
        if not re.search(r"[<>*{}]|\.\.\.|…", path) and not (ROOT / path.rstrip("/")).exists() and not _output(path)
    ]
    assert not stale, f"{doc} names paths that do not exist: {stale}"


def test_every_module_is_named_in_architecture():
    text = _text("ARCHITECTURE.md")
    modules = [p for p in _tracked() if any(fnmatch.fnmatch(p, g) for g in MODULES)]
    assert len(modules) > 50
    unnamed = [p for p in modules if f"`{p}`" not in text]
    assert not unnamed, "add a line for each to the Modules section of ARCHITECTURE.md:\n" + "\n".join(unnamed)
