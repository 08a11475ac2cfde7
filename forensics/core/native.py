"""The C extensions (parsers/_fastlog.c, parsers/_fasttrace.c): whether each is there, and why not.

Every site that could use one asks here, and this is the only reader of the settings:

- FORENSICS_NATIVE=0 switches both off (every line takes the reference path: polars for server
  logs, DuckDB for transfer traces; same tables, slower). Read at each call, so a test or a
  library user can switch within one process.
- FORENSICS_FASTLOG / FORENSICS_FASTTRACE, a path to a build of that module to load instead of
  the installed one (`make sanitize` points them at builds with ASan and UBSan). Being settings
  of the environment, they reach every worker process too.
- FORENSICS_REQUIRE_NATIVE=1 (CI) says an install without them is a failure (`required()`;
  setup.py reads it at build time).

A module is loaded from its file by name, never through `import forensics.parsers...`: that
would run the parsers package, which loads polars, and `core.runtime` asks here before polars
may load. Stdlib only, for the same reason.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

PACKAGE = "forensics.parsers"
# module -> what it is, for the messages
MODULES = {
    "_fastlog": "server-log scanner (parsers/_fastlog.c)",
    "_fasttrace": "transfer-trace field splitter (parsers/_fasttrace.c)",
}

_loaded: dict[str, ModuleType | None] = {}
_errors: dict[str, str] = {}


def override_var(name: str) -> str:
    """The setting that names a build of `name` to load instead of the installed one."""
    return "FORENSICS_" + name.strip("_").upper()


def installed(name: str) -> str | None:
    """The installed build of `name`, found without importing the parsers package."""
    # find_spec of the package imports `forensics` only, not the package itself
    spec = importlib.util.find_spec(PACKAGE)
    for d in list(spec.submodule_search_locations or []) if spec else []:
        for sfx in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(d, name + sfx)
            if os.path.exists(path):
                return path
    return None


def _load(name: str) -> ModuleType | None:
    if name not in MODULES:
        raise KeyError(f"no native module {name!r} (known: {', '.join(MODULES)})")
    if name in _loaded:
        return _loaded[name]
    full = f"{PACKAGE}.{name}"
    path = os.environ.get(override_var(name)) or installed(name)
    mod = None
    if path is None:
        _errors[name] = (
            f"{full} is not built (no C compiler at install, or an install that skipped it); "
            "`FORENSICS_REQUIRE_NATIVE=1 pip install -e .` shows the compiler's error"
        )
    elif full in sys.modules:
        mod = sys.modules[full]
    else:
        try:
            spec = importlib.util.spec_from_file_location(full, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules[full] = mod
        except (ImportError, OSError) as e:
            mod = None
            _errors[name] = f"{full} does not load from {path}: {e}"
    _loaded[name] = mod
    return mod


def switched_off() -> bool:
    """FORENSICS_NATIVE=0: the reference paths do everything."""
    return os.environ.get("FORENSICS_NATIVE", "1") == "0"


def built(name: str) -> ModuleType | None:
    """The module `name` ("_fastlog", "_fasttrace") when it loads, switched off or not."""
    return _load(name)


def module(name: str) -> ModuleType | None:
    """The module `name` when it loads and FORENSICS_NATIVE is not 0; else None (`why_not` says why)."""
    return None if switched_off() else _load(name)


def enabled(name: str) -> bool:
    return module(name) is not None


def why_not(name: str) -> str | None:
    """Why `module(name)` is None, in one sentence; None when it is there."""
    if _load(name) is None:
        return _errors[name]
    if switched_off():
        return f"FORENSICS_NATIVE=0 switches the {MODULES[name]} off"
    return None


def required() -> bool:
    """FORENSICS_REQUIRE_NATIVE=1 (CI): a module that is not there is a failure, not a slower path."""
    return os.environ.get("FORENSICS_REQUIRE_NATIVE") == "1"


def status() -> dict[str, str]:
    """Every module with "enabled" or the reason it is not, for messages and bench reports."""
    return {name: why_not(name) or "enabled" for name in MODULES}
