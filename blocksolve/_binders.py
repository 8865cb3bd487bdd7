"""Shape binding written out for one op and one rank per operand.

:func:`~blocksolve._normalize.bind_shapes` defines how a call's shapes bind:
it reads the op's declaration afresh for any shapes, broadcasts, and raises
the errors.  A new size of a family already planned (same op, options,
dtypes and ranks, :func:`blocksolve._execute._family`) binds its shapes once,
on its first call -- a notebook trying sizes -- and there that general loop
was the largest piece of the call.  For a family, :func:`compile_binder`
writes the same checks as straight-line Python for its ranks (about five
times faster), covering the shapes that bind without broadcasting; for any
others -- batch shapes that differ, core sizes that disagree -- it returns
None and the caller binds through ``bind_shapes``, which broadcasts or raises.
"""

from __future__ import annotations

import math

from ._normalize import Binding, _Flatten

__all__ = ["binder_for", "compile_binder"]

_BINDERS = {}  # (id(op), ranks) -> binder; ops are module-level constants


def binder_for(op, ranks):
    """:func:`compile_binder`'s binder for ``op`` and ``ranks``, compiled once per process."""
    key = (id(op), ranks)
    if key not in _BINDERS:
        _BINDERS[key] = compile_binder(op, ranks)
    return _BINDERS[key]


def compile_binder(op, ranks):
    """``bind(arrays)`` for ``op``'s inputs of ``ranks`` dimensions (in ``op.inputs`` order).

    ``bind(arrays)`` reads ``arrays[name].shape`` for every input and returns
    ``(binding, batch_size, output_shapes)`` -- what :func:`bind_shapes` and
    :func:`~blocksolve._normalize.output_shape` give for those shapes -- or
    None when the shapes need broadcasting or do not bind (sizes that
    disagree).  Returns None instead of a binder when an input has fewer
    dimensions than its core: every such call raises.
    """
    source = _binder_source(op, ranks)
    if source is None:
        return None
    # The named tuples are built with tuple.__new__: their own constructors are Python
    # functions, a new size's first call pays for every frame it enters.
    namespace = {
        "Binding": Binding,
        "Flatten": _Flatten,
        "new": tuple.__new__,
        "prod": math.prod,
        **{f"rule{i}": rule for i, rule in enumerate(op.derived.values())},
    }
    exec(compile(source, f"<blocksolve binder: {op.name} {ranks}>", "exec"), namespace)
    return namespace["bind"]


def _binder_source(op, ranks):
    """The text of ``bind(arrays)`` (see :func:`compile_binder`), or None."""
    body, symbols, cores, expands, batches = [], {}, [], [], []
    for i, (spec, rank) in enumerate(zip(op.inputs, ranks)):
        expand = spec.vector_ok and rank == 1  # a vector: the column it stands for
        split = rank + expand - len(spec.core)
        if split < 0:
            return None
        body.append(f"s{i} = arrays[{spec.name!r}].shape")
        core = []
        for axis, symbol in enumerate(spec.core):
            size = "1" if expand and axis == len(spec.core) - 1 else f"s{i}[{split + axis}]"
            if symbol in symbols:
                body.append(f"if {size} != {symbols[symbol]}: return None")
            elif size == "1":
                symbols[symbol] = size
            else:
                symbols[symbol] = f"d{len(symbols)}"
                body.append(f"{symbols[symbol]} = {size}")
            core.append(symbols[symbol])
        cores.append(core)
        expands.append(expand)
        batches.append(f"s{i}[:{split}]" if split else "()")
    body.append(f"batch = {batches[0]}")
    body += [f"if {b} != batch: return None" for b in batches[1:] if b != batches[0]]
    body.append("size = prod(batch)" if batches[0] != "()" else "size = 1")
    entries = [f"{symbol!r}: {size}" for symbol, size in symbols.items()]
    body.append(f"dims = {{{', '.join(entries)}}}")
    for i, name in enumerate(op.derived):
        body.append(f"dims[{name!r}] = rule{i}(dims)")
        symbols[name] = f"dims[{name!r}]"
    vector = any(expands)
    flatten = [
        f"new(Flatten, ({expand}, (), {_tuple(['size', *core])}))"
        for expand, core in zip(expands, cores)
    ]
    outputs = []
    for output in op.outputs:
        core = [symbols[s] for s in output.core]
        if vector and output.core and output.core[-1] == "k":
            core = core[:-1]
        outputs.append(f"batch + {_tuple(core)}")
    body.append(
        f"return new(Binding, (batch, dims, {vector}, {_tuple(flatten)})), size, {_tuple(outputs)}"
    )
    return "def bind(arrays):\n" + "".join(f"    {line}\n" for line in body)


def _tuple(items):
    """Python text of the tuple of the expressions ``items``."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
