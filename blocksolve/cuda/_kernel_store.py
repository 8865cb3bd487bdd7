"""Disk cache of linked kernels and of resolved descriptor traits, per call pattern.

What a call pattern costs before it can launch, and what each entry saves:

- **traits** (``traits/<key>.json``): the batches per block and block shape
  cuSolverDx suggests for the pattern.  Asking libmathdx costs seconds per
  query; with both values given explicitly, nvmath builds the descriptors
  in milliseconds.  Keyed by the pattern, the toolchain package versions and
  the source of the descriptor recipes (``_descriptors.py`` and the family
  modules), so they survive changes to the kernel machinery.
- **kernels** (``kernels/<key>.cubin``): the linked sm_XX cubin and the launch
  record of :func:`blocksolve.cuda._compile.compile_spec` (entry name,
  argument ABI, block shape, batches per block, shared memory, outputs).
  A process that finds it launches through cupy without importing numba.cuda
  or nvmath (numba-cuda cannot serialise kernels that link external code,
  numba/numba#8888).  Keyed by the pattern, the toolchain package versions,
  the driver version, the ABI version and the source of everything in
  :mod:`blocksolve.cuda` plus the op table (operand order); an entry whose
  cubin does not hash to its record is dropped.

Entries are files of :mod:`blocksolve.cuda._disk`: atomic, size-bounded,
least recently used first out.
"""

from __future__ import annotations

import hashlib
import json

from ._abi import ABI_VERSION
from ._disk import EntryStore
from ._versions import driver_version, package_versions, source_digest

__all__ = ["KernelStore", "pattern_fields"]

DEFAULT_MAX_BYTES = 2 << 30  # of kernels/; least recently used entries go first


def pattern_fields(pattern):
    """JSON-able form of every field of a call pattern (op, sizes, dtype, options, ...)."""
    return {
        "routine": pattern.routine,
        "dims": [list(d) for d in pattern.dims],
        "dtype": pattern.np_dtype.str,
        "options": [list(o) for o in pattern.options],
        "layouts": list(pattern.layouts),
        "target": pattern.target,
    }


def _digest(fields):
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


class KernelStore:
    """Traits and linked kernels of call patterns under ``directory``.

    Parameters
    ----------
    directory : path-like
        Usually ``blocksolve.cache_dir() / 'cuda'``.
    max_bytes : int, optional
        Bound of the kernels folder.
    """

    def __init__(self, directory, max_bytes=DEFAULT_MAX_BYTES):
        self._kernels = EntryStore(directory / "kernels", ".cubin", max_bytes)
        self._traits = EntryStore(directory / "traits", ".json", 64 << 20)
        self.hits = self.misses = 0

    # --- keys -----------------------------------------------------------------

    @staticmethod
    def traits_key(pattern):
        return _digest(
            {
                "pattern": pattern_fields(pattern),
                "versions": package_versions(),
                "recipes": source_digest("cuda/kernels/_descriptors.py", "cuda/kernels/[!_]*.py"),
            }
        )

    @staticmethod
    def kernel_key(pattern):
        return _digest(
            {
                "pattern": pattern_fields(pattern),
                "versions": package_versions(),
                "driver": driver_version(),
                "abi": ABI_VERSION,
                "sources": source_digest("cuda", "ops", "_op.py", "_numerics.py"),
            }
        )

    # --- traits -----------------------------------------------------------------

    def load_traits(self, pattern):
        """``{'batches_per_block': int, 'block_dim': [x, y, z]}`` or ``None``."""
        entry = self._traits.load(self.traits_key(pattern))
        return None if entry is None else entry[0]["traits"]

    def store_traits(self, pattern, traits):
        self._traits.store(
            self.traits_key(pattern), {"traits": traits, "pattern": pattern_fields(pattern)}
        )

    # --- kernels ----------------------------------------------------------------

    def load_kernel(self, pattern):
        """``(record, cubin)`` of the pattern's linked kernel, or ``None``."""
        key = self.kernel_key(pattern)
        entry = self._kernels.load(key)
        if entry is not None:
            record, cubin = entry
            if record.get("abi_version") == ABI_VERSION and hashlib.sha256(
                cubin
            ).hexdigest() == record.get("cubin_sha256"):
                self.hits += 1
                return record, cubin
            self._kernels.path(key).unlink(missing_ok=True)
        self.misses += 1
        return None

    def store_kernel(self, pattern, record, cubin):
        self._kernels.store(
            self.kernel_key(pattern), {**record, "pattern": pattern_fields(pattern)}, cubin
        )
