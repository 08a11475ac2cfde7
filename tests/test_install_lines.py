"""Every `pip install` line of the documentation installs this project or what it depends on.

`forensics` on the package index is an unrelated project: an install line that names it installs
someone else's code. A line in README.md or docs/**/*.md may name the clone (`.`, `'.[ray]'`, a path),
the distribution's own name (pyproject's `[project] name`, with or without extras), or a
dependency pyproject lists (required or optional); any other name fails here.
"""

from __future__ import annotations

import re
import shlex
import tomllib

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# options of pip install that take a value: the value is not a package
_VALUED = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f"}
_VALUED |= {"--find-links", "-t", "--target", "--prefix", "--root", "--python-version", "--platform"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(req: str) -> str:
    return _norm(_NAME.match(req.strip()).group(0))


def known_names() -> set[str]:
    project = PYPROJECT["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {_requirement_name(r) for r in reqs} | {_norm(project["name"])}


def docs() -> list:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def install_lines(text: str) -> list[str]:
    """The arguments of every `pip install` in the text: to the end of its inline code span, or of its line."""
    out = []
    for line in text.splitlines():
        for m in re.finditer(r"pip3? install\b([^`\n]*)", line):
            out.append(m.group(1))
    return out


def packages(args: str) -> list[str]:
    """The packages an install line names (options and their values left out)."""
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w in _VALUED:
            skip = True
        elif w.startswith("-"):
            continue
        elif w in ("&&", "||", ";", "|") or w.startswith("#"):
            break
        else:
            out.append(w.rstrip(",;:"))
    return [p for p in out if p]


def is_local(pkg: str) -> bool:
    return pkg.startswith((".", "/", "~")) or "/" in pkg


def offending(text: str, known: set[str]) -> list[str]:
    bad = []
    for args in install_lines(text):
        for pkg in packages(args):
            if is_local(pkg):
                continue
            m = _NAME.match(pkg)
            if not m or _norm(m.group(0)) not in known:
                bad.append(pkg)
    return bad


def test_project_name_is_not_the_unrelated_forensics():
    name = _norm(PYPROJECT["project"]["name"])
    assert name != "forensics" and name in known_names()
    assert PYPROJECT["project"]["scripts"]["forensics"] == "forensics.cli:main"


def test_every_install_line_installs_this_project_or_a_dependency():
    known = known_names()
    problems = {}
    for path in docs():
        bad = offending(path.read_text(), known)
        if bad:
            problems[str(path.relative_to(ROOT))] = bad
    assert not problems, (
        f"install lines naming a package that is neither the clone, {PYPROJECT['project']['name']!r} "
        f"nor a dependency of pyproject.toml: {problems}"
    )


def test_the_check_catches_what_it_should():
    known = known_names()
    name = PYPROJECT["project"]["name"]
    assert offending('`pip install "forensics[ray]"`', known) == ["forensics[ray]"]
    assert offending("pip install requests-forensics", known) == ["requests-forensics"]
    ok = [
        "`pip install '.[ray]'`",
        "`pip install -e .`",
        "pip install -q -e '.[test]'",
        f"`pip install '{name}[ray]'`",
        "`pip install ray>=2.10`",
        "`pip install` also builds",
        "pip install -r requirements.txt",
        "pip install ./dist/x.whl",
    ]
    for line in ok:
        assert offending(line, known) == [], line
