"""Which check a Filter uses: the compiled one (bloomfilter._native, the extension's C++ core,
built with the package when a C++ compiler and Python's headers are there: see setup.py), or the
pure-Python one (_core's compiled-per-filter function, _vector with NumPy, _batch without).
Both answer alike, bit for bit, on every format and key (tests/test_native.py).

BLOOMFILTER_NATIVE=0 in the environment, when bloomfilter is imported, turns the compiled check
off; so does setting `native` to None here (for filters made afterwards: tests do).
"""

import os

from . import _core

__all__ = ["native", "checker", "disabled_by_environment"]

disabled_by_environment = os.environ.get("BLOOMFILTER_NATIVE", "").strip().lower() in (
    "0", "no", "off", "false")

native = None
if not disabled_by_environment:
    try:
        from . import _native as native
    except ImportError:  # not built: pure Python
        native = None


def checker(data):
    """The compiled check of a value's bytes (validated, in any object exporting its buffer:
    a Filter's bytearray), or None when the compiled check is not used."""
    if native is None:
        return None
    return native.Checker(data, _core.key_bytes)
