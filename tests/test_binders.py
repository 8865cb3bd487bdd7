"""The binders written out per op and ranks (``blocksolve._binders``) bind exactly as
``bind_shapes`` does, and leave to it every shape that broadcasts or does not bind."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import blocksolve
from _helpers import operands
from blocksolve import _execute
from blocksolve._binders import binder_for, compile_binder
from blocksolve._errors import LinAlgError
from blocksolve._normalize import bind_shapes, output_shape
from blocksolve._ops import OPS, all_ops

ALL_OPS = {f"{op.name}-{op.routine}{op.signature}": op for op in all_ops()}


class _Shaped:
    """Stands in for an array: the binders read only ``shape``."""

    def __init__(self, shape):
        self.shape = shape


def _bound_in_full(op, shapes):
    """``(binding, batch size, output shapes)`` by ``bind_shapes``, or the exception."""
    try:
        binding = bind_shapes(op, "f", shapes)
    except (LinAlgError, ValueError) as error:
        return error
    return binding, binding.batch_size, tuple(output_shape(o, binding) for o in op.outputs)


@st.composite
def op_and_shapes(draw):
    """An op and one shape per input, made mostly of a few sizes so that they often bind,
    with batch shapes that often agree."""
    op = ALL_OPS[draw(st.sampled_from(sorted(ALL_OPS)))]
    sizes = st.sampled_from([0, 1, 2, 3])
    batch = tuple(draw(st.lists(sizes, max_size=2)))
    shapes = {}
    for spec in op.inputs:
        rank = max(0, len(spec.core) + draw(st.sampled_from([-1, 0, 0, 0, 1, 2])))
        own_batch = batch if draw(st.booleans()) else tuple(draw(st.lists(sizes, max_size=2)))
        shape = (own_batch + tuple(draw(sizes) for _ in spec.core))[-rank:] if rank else ()
        shapes[spec.name] = shape
    return op, shapes


def _batch_shapes(op, shapes):
    """Each input's own batch shape (a right-hand-side vector has none)."""
    return {
        shapes[spec.name][: len(shapes[spec.name]) - len(spec.core)]
        if not (spec.vector_ok and len(shapes[spec.name]) == 1)
        else ()
        for spec in op.inputs
    }


@given(op_and_shapes())
@settings(max_examples=600, deadline=None)
def test_a_binder_binds_as_bind_shapes_or_leaves_it_the_shapes(case):
    """Same binding, batch size and output shapes where the batch shapes agree and the
    shapes bind; None exactly where they broadcast or ``bind_shapes`` raises."""
    op, shapes = case
    ranks = tuple(len(shapes[spec.name]) for spec in op.inputs)
    binder = compile_binder(op, ranks)
    full = _bound_in_full(op, shapes)
    if binder is None:  # no binder: every call of these ranks raises
        assert isinstance(full, LinAlgError), full
        return
    fast = binder({name: _Shaped(shape) for name, shape in shapes.items()})
    if isinstance(full, Exception) or len(_batch_shapes(op, shapes)) > 1:
        assert fast is None, (shapes, fast)
    else:
        assert fast == full


@pytest.mark.parametrize("name", sorted(ALL_OPS))
def test_a_binder_binds_every_op(name):
    """Every op, batched or not, a right-hand side as a vector where the op takes one."""
    op = ALL_OPS[name]
    cases = [(batch, False) for batch in [(), (3,), (2, 0)]]
    cases += [((), True)] if any(spec.vector_ok for spec in op.inputs) else []
    for batch, vector in cases:
        shapes = {}
        for spec in op.inputs:
            core = tuple({"m": 5, "n": 4, "k": 2}[s] for s in spec.core)
            shapes[spec.name] = core[:-1] if vector and spec.vector_ok else batch + core
        ranks = tuple(len(shapes[spec.name]) for spec in op.inputs)
        fast = compile_binder(op, ranks)({n: _Shaped(s) for n, s in shapes.items()})
        assert fast is not None, shapes
        assert fast == _bound_in_full(op, shapes)


def test_binders_are_compiled_once_per_op_and_ranks():
    op = OPS["solve"]
    assert binder_for(op, (3, 3)) is binder_for(op, (3, 3))
    assert binder_for(op, (3, 3)) is not binder_for(op, (2, 1))


def test_a_new_size_binds_without_bind_shapes(monkeypatch):
    """The family's plan compiles the binder; a new size of its ranks uses it, and a
    call it leaves (broadcasting) still binds through ``bind_shapes``."""
    op = OPS["solve"]
    a, b = operands(op, batch=(3,))
    _execute.clear_plans()
    blocksolve.solve(a, b)

    def no_binding(*args):
        raise AssertionError("bound by bind_shapes")

    monkeypatch.setattr(_execute, "bind_shapes", no_binding)
    a5, b5 = operands(op, batch=(2,), sizes={"n": 5, "k": 1})
    np.testing.assert_allclose(blocksolve.solve(a5, b5), np.linalg.solve(a5, b5), rtol=1e-12)
    with pytest.raises(AssertionError, match="bound by bind_shapes"):
        blocksolve.solve(a5, b5[:1])  # (2, 5, 5) with (1, 5, 1): broadcast
