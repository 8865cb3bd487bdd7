"""Entry files of the CUDA backend's disk caches.

Every cache of the CUDA backend (generated device code, resolved descriptor
traits, linked kernels) stores one file per entry under one directory:
a 4-byte header length, a JSON header and an opaque payload.  This module is
the one place that reads and writes them:

- writes are atomic (temporary file in the same directory, then
  :func:`os.replace`), so a reader in another process sees a whole entry or
  none, and concurrent writers of the same entry both succeed;
- a file that is truncated, unreadable or does not carry the key it is
  stored under is deleted and reported missing (the caller regenerates it);
- reads refresh the file's modification time, and each write trims the
  directory to a size bound by deleting the least recently used entries.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path

__all__ = ["EntryStore"]

_HEADER = struct.Struct("<I")


class EntryStore:
    """Keyed ``(header, payload)`` files ``<key><suffix>`` under ``directory``.

    Parameters
    ----------
    directory : path-like
    suffix : str
        File name suffix of the entries (``'.ltoir'``, ``'.cubin'``, ...).
    max_bytes : int
        Bound of the directory's total size.
    """

    def __init__(self, directory, suffix, max_bytes):
        self.directory = Path(directory)
        self.suffix = suffix
        self.max_bytes = max_bytes

    def path(self, key):
        return self.directory / f"{key}{self.suffix}"

    def load(self, key):
        """``(header, payload)`` stored under ``key``, or ``None``; broken entries are removed."""
        path = self.path(key)
        try:
            raw = path.read_bytes()
            (length,) = _HEADER.unpack_from(raw)
            header = json.loads(raw[_HEADER.size : _HEADER.size + length])
            payload = raw[_HEADER.size + length :]
            if header.get("key") != key or len(payload) != header.get("size"):
                raise ValueError("entry does not match its key")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, struct.error):
            path.unlink(missing_ok=True)
            return None
        try:
            os.utime(path)  # least recently used eviction
        except OSError:  # a read-only cache is still a cache
            pass
        return header, payload

    def store(self, key, header, payload=b""):
        """Write an entry atomically, then trim the directory to :attr:`max_bytes`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        encoded = json.dumps({**header, "key": key, "size": len(payload)}).encode()
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=self.suffix)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_HEADER.pack(len(encoded)) + encoded + payload)
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.trim()

    def entries(self):
        """Paths of the complete entries (temporary files excluded)."""
        if not self.directory.exists():
            return []
        return [p for p in self.directory.glob(f"*{self.suffix}") if not p.name.startswith(".tmp-")]

    def trim(self):
        """Delete least recently used entries until the total fits :attr:`max_bytes`."""
        entries = []
        for path in self.entries():
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size
