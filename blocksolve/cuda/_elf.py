"""What a linked cubin says about its kernel, read from the ELF file itself.

A cubin is a little-endian ELF64 file.  Four facts matter before a cached
kernel is trusted:

- the parameter table of the entry (``.nv.info.<entry>``, attribute
  ``EIATTR_KPARAM_INFO``): ordinal, byte offset and size of every kernel
  parameter, checked against the argument layout the launcher will pass;
- the static shared memory (``.nv.shared.*`` sections: the kernel's own and
  what cuSolverDx declares), added to the dynamic shared memory of the plan
  and checked against the device's limit;
- the registers a thread uses (``.nv.info``, attribute ``EIATTR_REGCOUNT``, one
  per function), which times the block's threads must fit a block's register file;
- the SM architecture it was linked for (``e_flags``).
"""

from __future__ import annotations

import struct

__all__ = [
    "CubinError",
    "kernel_params",
    "static_shared_bytes",
    "registers",
    "sm_version",
    "entries",
]

_EIFMT_SVAL = 4
_EIATTR_KPARAM_INFO = 0x17
_EIATTR_REGCOUNT = 0x2F


class CubinError(ValueError):
    """The bytes are not a cubin, or lack what is looked for."""


def _sections(cubin):
    """``{name: (offset, size)}`` of every ELF section."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise CubinError("not an ELF64 file")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    sections = {}
    for name, _type, _flags, _addr, offset, size in headers:
        start = names_at + name
        sections[cubin[start : cubin.index(b"\0", start)].decode()] = (offset, size)
    return sections


def entries(cubin):
    """Names of the kernels (entries with a ``.nv.info.<entry>`` table)."""
    return sorted(
        name.removeprefix(".nv.info.") for name in _sections(cubin) if name.startswith(".nv.info.")
    )


def _attributes(cubin, section, wanted):
    """``at`` of every attribute ``wanted`` with a value block in ``section`` (an
    ``.nv.info`` table: 1-byte format, 1-byte attribute, then for ``EIFMT_SVAL`` a 2-byte
    length and the value)."""
    offset, size = section
    at = offset
    while at < offset + size:
        fmt, attribute = cubin[at], cubin[at + 1]
        length = struct.unpack_from("<H", cubin, at + 2)[0] if fmt == _EIFMT_SVAL else 0
        if fmt == _EIFMT_SVAL and attribute == wanted:
            yield at + 4
        at += 4 + length


def kernel_params(cubin, entry):
    """``[(ordinal, offset, size), ...]`` of ``entry``'s parameters, by ordinal (bytes)."""
    sections = _sections(cubin)
    try:
        section = sections[f".nv.info.{entry}"]
    except KeyError:
        raise CubinError(f"no kernel {entry!r} in the cubin") from None
    params = []
    for at in _attributes(cubin, section, _EIATTR_KPARAM_INFO):
        _index, ordinal, param_offset, flags = struct.unpack_from("<IHHI", cubin, at)
        params.append((ordinal, param_offset, (flags >> 18) & 0x3FFF))
    return sorted(params)


def registers(cubin):
    """Registers per thread of the cubin's most demanding function (its kernel holds one
    kernel; a function it calls without inlining runs on the kernel's threads)."""
    section = _sections(cubin).get(".nv.info")
    if section is None:
        raise CubinError("no .nv.info section in the cubin")
    counts = [
        struct.unpack_from("<II", cubin, at)[1]
        for at in _attributes(cubin, section, _EIATTR_REGCOUNT)
    ]
    if not counts:
        raise CubinError("the cubin records no register count")
    return max(counts)


def static_shared_bytes(cubin):
    """Static shared memory of the cubin's kernel (it holds one), in bytes."""
    return sum(
        size for name, (_, size) in _sections(cubin).items() if name.startswith(".nv.shared.")
    )


def sm_version(cubin):
    """The SM architecture the cubin runs on, e.g. ``90``."""
    if cubin[:4] != b"\x7fELF":
        raise CubinError("not an ELF file")
    (flags,) = struct.unpack_from("<I", cubin, 0x30)
    return (flags >> 8) & 0xFF
