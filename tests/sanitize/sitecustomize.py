"""For `make sanitize`: import forensics.parsers._fastlog from $FORENSICS_FASTLOG (the scanner built
with AddressSanitizer and UBSan) instead of the installed build, in this process and every
process it starts (PYTHONPATH holds this directory)."""

import importlib.util
import os
import sys


class _SanitizedScanner:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "forensics.parsers._fastlog" and os.environ.get("FORENSICS_FASTLOG"):
            return importlib.util.spec_from_file_location(name, os.environ["FORENSICS_FASTLOG"])
        return None


sys.meta_path.insert(0, _SanitizedScanner)
