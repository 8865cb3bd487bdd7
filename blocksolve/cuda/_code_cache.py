"""Disk cache of the cuSolverDx device code that libmathdx generates.

Why: generating a cuSolverDx function (libmathdx + NVRTC) takes seconds
per (function, size, dtype, options) and is the bulk of a cold kernel
build, and one generated function serves every kernel that calls it
(``lu_factor`` and ``solve`` with any number of right-hand sides share one
getrf).  A kernel missing from the linked-kernel store
(:mod:`blocksolve.cuda._kernel_store`) but whose functions are here still
pays numba's typing, NVVM and the nvJitLink link, not the code generation.

Entries are keyed by a SHA-256 of everything that shapes the code: the
solver's definition (function, size -- hence op and sizes --, precision and
data type, arrangement and leading dimensions, fill mode, transpose mode,
side, diagonal, batches per block, block dim, target architecture), the
requested code type and execution API, and the versions of nvmath-python,
libmathdx, numba-cuda, NVRTC and the CUDA driver.  Each entry is one file
``<key>.ltoir`` of :mod:`blocksolve.cuda._disk` (atomic writes, broken files
dropped, least recently used entries evicted above :attr:`CodeCache.max_bytes`)
whose header holds the symbol and ISA version and whose payload is the LTO-IR.
"""

from __future__ import annotations

import hashlib
import json

from .._compat.nvmath import nvrtc_version
from ._disk import EntryStore
from ._versions import driver_version, package_versions

__all__ = ["CodeCache", "solver_key_fields", "library_versions"]

_SUFFIX = ".ltoir"
# Default bound of the directory; least recently used entries go first above it.
DEFAULT_MAX_BYTES = 1 << 30

_DEFINITION = (
    "function",
    "size",
    "precision",
    "execution",
    "sm",
    "arrangement",
    "transpose_mode",
    "side",
    "diag",
    "fill_mode",
    "batches_per_block",
    "data_type",
    "leading_dimensions",
    "block_dim",
    "job",
)


def _plain(value):
    """JSON-able, stable form of a descriptor attribute."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def solver_key_fields(solver):
    """The definition attributes of a ``nvmath.device.Solver`` (missing ones as ``None``)."""
    return {name: _plain(getattr(solver, name, None)) for name in _DEFINITION}


def library_versions():
    """Versions that change generated code: the toolchain packages, NVRTC, the driver."""
    return {**package_versions(), "driver": driver_version(), "nvrtc": nvrtc_version()}


class CodeCache:
    """LTO-IR files under ``directory``, at most ``max_bytes`` in total.

    Parameters
    ----------
    directory : path-like
    max_bytes : int, optional
    versions : dict, optional
        Library versions mixed into every key (default
        :func:`library_versions`, computed on first use).
    """

    def __init__(self, directory, max_bytes=DEFAULT_MAX_BYTES, versions=None):
        self._entries = EntryStore(directory, _SUFFIX, max_bytes)
        self._versions = versions
        self.hits = self.misses = 0

    @property
    def directory(self):
        return self._entries.directory

    @property
    def max_bytes(self):
        return self._entries.max_bytes

    def key(self, solver, code_type, execution_api):
        if self._versions is None:
            self._versions = library_versions()
        fields = {
            "solver": solver_key_fields(solver),
            "code_type": _plain(code_type),
            "execution_api": execution_api,
            "versions": self._versions,
        }
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()

    def load(self, key):
        """``(header, data)`` of an entry, or ``None``; broken entries are removed."""
        return self._entries.load(key)

    def store(self, key, header, data):
        """Write an entry atomically, then trim the directory to :attr:`max_bytes`."""
        self._entries.store(key, header, data)

    def wrap(self, compile_execute, make_code):
        """A caching drop-in for ``compile_solver_execute(solver, code_type, execution_api)``.

        Parameters
        ----------
        compile_execute : callable
            Returns ``(code, symbol)`` with ``code.isa_version`` and
            ``code.data`` (the LTO-IR bytes).
        make_code : callable
            ``make_code(code_type, isa_version, data)`` rebuilds ``code``
            from a cache entry.
        """

        def cached_compile_execute(solver, code_type, execution_api):
            key = self.key(solver, code_type, execution_api)
            entry = self.load(key)
            if entry is not None:
                self.hits += 1
                header, data = entry
                return make_code(code_type, header["isa_version"], data), header["symbol"]
            self.misses += 1
            code, symbol = compile_execute(solver, code_type, execution_api)
            self.store(
                key, {"symbol": symbol, "isa_version": list(code.isa_version)}, bytes(code.data)
            )
            return code, symbol

        return cached_compile_execute
