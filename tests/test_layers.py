"""The import contracts (pyproject.toml, [tool.importlinter]): layers import one way, cli down to
core, renderers never query (reports import no catalog, ingest, store or duckdb), and the installed
package imports nothing of the checkout (tools/, tests/, bench/).

The tree is built and linted by tools/lint_imports.py, which `make lint` runs too.
"""

from __future__ import annotations

import pytest

from tests.conftest import missing
from tools.lint_imports import installed_tree, lint, lint_imports


@pytest.fixture(autouse=True)
def _lint_imports():
    if lint_imports() is None:
        missing("import-linter is not installed: it is a test extra (pip install -e '.[test]')")


def test_layers_import_one_way(tmp_path):
    res = lint(installed_tree(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "3 kept, 0 broken" in res.stdout


@pytest.mark.parametrize(
    "module, wrong_way",
    [
        ("forensics/parsers/base.py", "from forensics.ingest import sources"),
        ("forensics/parsers/base.py", "from forensics.store import Store"),
        ("forensics/core/schema.py", "from forensics.parsers import lines"),
        ("forensics/analysis/stats.py", "from forensics.reports import render"),
        ("forensics/store/__init__.py", "from forensics.catalog import sql"),
        ("forensics/store/snapshots.py", "from forensics.ingest import sources"),
        # catalog and ingest share a layer and import nothing of each other
        ("forensics/ingest/pipeline.py", "from forensics.catalog import sql"),
        ("forensics/catalog/named.py", "from forensics.ingest import sources"),
        ("forensics/reports/render.py", "from tools import samplegen"),
        # renderers take a model and never query
        ("forensics/reports/render.py", "import duckdb"),
        ("forensics/reports/text/evidence.py", "from forensics.catalog import named"),
        ("forensics/reports/redact.py", "from forensics.store import Store"),
        ("forensics/reports/html.py", "from forensics.ingest import sources"),
    ],
)
def test_a_wrong_way_import_breaks_the_contract(tmp_path, module, wrong_way):
    tree = installed_tree(tmp_path)
    path = tree / module
    path.write_text(path.read_text() + f"\n\ndef _wrong_way():\n    {wrong_way}\n")
    res = lint(tree)
    assert res.returncode == 1, res.stdout
    assert "BROKEN" in res.stdout and wrong_way.split()[1] in res.stdout
