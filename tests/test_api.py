"""Contract tests shared by every op, derived from the op declarations (``blocksolve.ops``).

Per-op numerics live in the per-family test modules; here every public
function is checked for the rules DESIGN.md §1 gives all of them: dtype
promotion and refusal, shapes, batch broadcasting, empty batches, array
types, and error messages that name the function and argument.
"""

import contextvars

import numpy as np
import pytest
import scipy.linalg

import blocksolve
from _helpers import (
    CALLS,
    OP_NAMES,
    OPS,
    call,
    first_array,
    gpu_available,
    operands,
    random_spd,
    to_numpy,
)
from blocksolve._op import all_ops
from blocksolve.ops.qr import MODES as QR_MODES


def test_every_op_has_a_call():
    assert set(CALLS) == {op.name for op in all_ops()}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_docstring_documents_the_blocksolve_keywords(name):
    doc = getattr(blocksolve, name).__doc__
    assert "    errors : {'raise', 'warn', 'nan', 'ignore'}, optional\n        " in doc
    assert "    return_info : bool, default False\n        Return ``(result, info)``" in doc
    assert "    stream : CUDA stream, optional\n        For a call that runs on a GPU" in doc
    assert "<blocksolve keywords>" not in doc and "See :mod:`blocksolve`" not in doc
    parameters = doc[doc.index("Parameters") : doc.index("Returns")]
    assert (
        parameters.index("errors :")
        < parameters.index("return_info :")
        < parameters.index("stream :")
    )


# What each library refuses: NumPy everything outside the four inexact dtypes (integers
# aside), SciPy only what it has no LAPACK type for.
_REFUSED = {"numpy": [np.float16, np.longdouble, object], "scipy": [object, "U3"]}


@pytest.mark.parametrize(
    "name, bad", [(name, bad) for name in OP_NAMES for bad in _REFUSED[OPS[name].library]]
)
def test_unsupported_dtypes_refused_like_the_reference(name, bad):
    op = OPS[name]
    args = operands(op)
    args[0] = args[0].astype(bad)
    with pytest.raises(TypeError, match=rf"{name}: array type .* is unsupported in linalg"):
        call(op, args)


def _integer_like(op, dtype):
    return [
        x if spec.kind == "index" else (2 * np.eye(*x.shape[-2:]) + np.zeros(x.shape)).astype(dtype)
        for spec, x in zip(op.inputs, operands(op))
    ]


_NUMPY_NAMES = [name for name in OP_NAMES if OPS[name].library == "numpy"]
_SCIPY_NAMES = [name for name in OP_NAMES if OPS[name].library == "scipy"]


@pytest.mark.parametrize("name", _NUMPY_NAMES)
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.bool_])
def test_integer_and_bool_promote_to_float64(name, dtype):
    op = OPS[name]
    result = first_array(call(op, _integer_like(op, dtype), errors="ignore"))
    assert result.dtype == np.float64


_SCIPY_CALLS = {  # SciPy's function, called as CALLS calls blocksolve's
    "cho_factor": lambda a: scipy.linalg.cho_factor(a),
    "cho_solve": lambda c, b: scipy.linalg.cho_solve((c, True), b),
    "lu_factor": lambda a: scipy.linalg.lu_factor(a),
    "lu_solve": lambda lu, piv, b: scipy.linalg.lu_solve((lu, piv), b),
    "solve_triangular": lambda a, b: scipy.linalg.solve_triangular(a, b, lower=True),
}


@pytest.mark.parametrize("name", _SCIPY_NAMES)
@pytest.mark.parametrize(
    "dtype",
    [
        np.bool_,
        np.int8,
        np.uint8,
        np.int16,
        np.uint16,
        np.float16,
        np.int32,
        np.uint64,
        np.longdouble,
        np.clongdouble,
    ],
)
def test_scipy_names_promote_as_scipy_does(name, dtype):
    """SciPy's rule (its LAPACK type choice), not NumPy's: small integers, bool and float16
    compute in float32, other integers and long double in float64."""
    op = OPS[name]
    args = _integer_like(op, dtype)
    expected = _SCIPY_CALLS[name](*args)
    while isinstance(expected, (tuple, list)):  # SciPy's batched factorisations give lists
        expected = expected[0]
    result = first_array(call(op, args))
    assert result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-6)


@pytest.mark.parametrize("name", OP_NAMES)
def test_non_native_byte_order_is_converted(name):
    """Big-endian input (files, network formats) computes as native input does."""
    op = OPS[name]
    args = operands(op)
    swapped = [x.astype(x.dtype.newbyteorder(">" if x.dtype.isnative else "<")) for x in args]
    assert all(not x.dtype.isnative for x in swapped)
    expected, result = call(op, args), call(op, swapped)
    for x, y in zip(
        expected if isinstance(expected, tuple) else (expected,),
        result if isinstance(result, tuple) else (result,),
    ):
        assert np.asarray(y).dtype == np.asarray(x).dtype and np.asarray(y).dtype.isnative
        np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("name", OP_NAMES)
def test_mixed_precision_promotes(name):
    op = OPS[name]
    args = operands(op, dtype=np.float32)
    if len(op.inputs) > 1:
        args[-1] = args[-1].astype(np.complex128)
        expected = np.complex128
    else:
        expected = np.float32
    assert first_array(call(op, args)).dtype == expected


@pytest.mark.parametrize("name", OP_NAMES)
def test_one_dimensional_first_operand_refused(name):
    op = OPS[name]
    args = operands(op)
    args[0] = args[0][0, 0]
    with pytest.raises(
        np.linalg.LinAlgError,
        match=rf"{name}: {op.inputs[0].name} must be at least 2-D; got shape \(\d+,\)",
    ):
        call(op, args)


@pytest.mark.parametrize("name", [n for n in OP_NAMES if OPS[n].inputs[0].core == ("n", "n")])
def test_non_square_refused(name):
    op = OPS[name]
    args = operands(op)
    args[0] = args[0][..., :-1]
    with pytest.raises(np.linalg.LinAlgError, match=rf"{name}: {op.inputs[0].name} must be square"):
        call(op, args)


@pytest.mark.parametrize("name", [n for n in OP_NAMES if OPS[n].inputs[-1].vector_ok])
def test_mismatched_right_hand_side_refused(name):
    op = OPS[name]
    args = operands(op)
    args[-1] = np.concatenate([args[-1], args[-1][..., :1, :]], axis=-2)
    with pytest.raises(ValueError, match=rf"{name}: b.shape\[-2\] = \d+ does not match"):
        call(op, args)


@pytest.mark.parametrize("name", [n for n in OP_NAMES if OPS[n].inputs[-1].vector_ok])
def test_stack_of_vectors_gets_a_hint(name):
    """NumPy 2 reads a (batch, n) b as matrices; the error says how to pass vectors."""
    op = OPS[name]
    args = operands(op, batch=(5,))
    vectors = args[-1][..., 0]
    with pytest.raises(
        ValueError,
        match=rf"{name}: b.shape\[-2\] = 5 does not match .*; "
        r"b is a vector only when b.ndim == 1 \(the NumPy 2 rule\): for a batch "
        r"of vectors pass b\[\.\.\., None\]",
    ):
        call(op, args[:-1] + [vectors])
    as_columns = call(op, args[:-1] + [vectors[..., None]])
    expected = call(op, args[:-1] + [args[-1][..., :1]])
    np.testing.assert_array_equal(first_array(as_columns), first_array(expected))
    with pytest.raises(ValueError) as mismatch:  # a plain mismatch gets no hint
        call(op, args[:-1] + [np.ones((5, 7, 1))])
    assert "None]" not in str(mismatch.value)


@pytest.mark.parametrize("name", [n for n in OP_NAMES if len(OPS[n].inputs) > 1])
def test_batch_dimensions_broadcast_or_fail_clearly(name):
    op = OPS[name]
    args = operands(op, batch=(3, 1))
    args[-1] = operands(op, batch=(4,))[-1]
    result = first_array(call(op, args))
    assert result.shape[:2] == (3, 4)
    args[-1] = operands(op, batch=(5,))[-1]
    args[0] = operands(op, batch=(2,))[0]
    with pytest.raises(ValueError, match=rf"{name}: batch dimensions do not broadcast; got shapes"):
        call(op, args)


@pytest.mark.parametrize("name", OP_NAMES)
@pytest.mark.parametrize("batch", [(0,), (2, 0)])
def test_empty_batches(name, batch):
    op = OPS[name]
    single = call(op, operands(op, batch=(1,)))
    empty = call(op, operands(op, batch=batch))
    flat = lambda r: [
        np.asarray(x)
        for x in (r if isinstance(r, tuple) else (r,))  # noqa: E731
        if not isinstance(x, bool)
    ]
    for one, none in zip(flat(single), flat(empty)):
        assert none.shape == batch + one.shape[1:] and none.dtype == one.dtype


@pytest.mark.parametrize("name", OP_NAMES)
def test_inputs_never_modified(name):
    op = OPS[name]
    args = operands(op, batch=(3,))
    before = [x.copy() for x in args]
    call(op, args)
    for x, y in zip(args, before):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", OP_NAMES)
def test_return_info_shape_and_dtype(name):
    op = OPS[name]
    result, info = call(op, operands(op, batch=(2, 3)), return_info=True)
    assert isinstance(info, np.ndarray) and info.shape == (2, 3) and info.dtype == np.int32
    assert not info.any()


def test_bad_policy_refused():
    with pytest.raises(ValueError, match=r"cholesky: errors must be one of 'raise', 'warn'"):
        blocksolve.cholesky(np.eye(2), errors="explode")
    with pytest.raises(ValueError, match=r"errstate: errors must be one of"):
        with blocksolve.errstate("sometimes"):
            pass
    for bad in ("explode", 42):  # also where return_info makes the policy moot
        with pytest.raises(ValueError, match=r"cholesky: errors must be one of"):
            blocksolve.cholesky(np.eye(2), errors=bad, return_info=True)


def test_errstate_nests_and_restores():
    assert blocksolve.geterrors() is None
    with blocksolve.errstate("nan"):
        with blocksolve.errstate("ignore"):
            assert blocksolve.geterrors() == "ignore"
        assert blocksolve.geterrors() == "nan"
    assert blocksolve.geterrors() is None


def test_one_errstate_object_serves_again_nested_and_as_a_decorator():
    nan, ignore = blocksolve.errstate("nan"), blocksolve.errstate("ignore")
    for _ in range(2):
        with nan:
            with ignore:
                with nan:
                    assert blocksolve.geterrors() == "nan"
                assert blocksolve.geterrors() == "ignore"
            assert blocksolve.geterrors() == "nan"
        assert blocksolve.geterrors() is None
    assert repr(nan) == "blocksolve.errstate('nan')"

    @nan
    def policy(depth):
        return policy(depth - 1) if depth else blocksolve.geterrors()

    assert policy(3) == "nan" and blocksolve.geterrors() is None


def test_errstate_is_per_thread():
    import threading

    scope, inside, seen = blocksolve.errstate("nan"), threading.Barrier(2, timeout=30), {}

    def worker(name):
        with scope:
            inside.wait()  # both threads inside the same object's block at once
            seen[name] = blocksolve.geterrors()
            inside.wait()
        seen[name + " after"] = blocksolve.geterrors()

    threads = [threading.Thread(target=worker, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": "nan", "b": "nan", "a after": None, "b after": None}
    assert blocksolve.geterrors() is None


def test_warnings_point_at_the_callers_line():
    """Also through blocksolve's own wrappers (blocksolve.linalg): the first frame outside
    blocksolve is the one named."""
    from blocksolve import linalg

    with pytest.warns(blocksolve.LinAlgWarning) as record:
        blocksolve.cholesky(-np.eye(2), errors="warn")
        with blocksolve.errstate("warn"):
            linalg.cholesky(-np.eye(2))
    assert [w.filename for w in record] == [__file__] * 2


def test_linalgerror_is_numpys():
    assert issubclass(blocksolve.LinAlgError, np.linalg.LinAlgError)
    assert issubclass(blocksolve.LinAlgWarning, RuntimeWarning)


def test_failure_message_truncates_long_lists():
    a = np.broadcast_to(-np.eye(2), (9, 2, 2))
    with pytest.raises(
        blocksolve.LinAlgError, match=r"9 matrices of the batch failed.* and 4 more"
    ) as e:
        blocksolve.cholesky(a)
    assert e.value.indices == [(i,) for i in range(9)]


def test_boolean_options_validated():
    with pytest.raises(TypeError, match="cholesky: upper must be a bool"):
        blocksolve.cholesky(np.eye(2), upper="yes")


def test_lists_and_scalars_accepted():
    np.testing.assert_allclose(
        blocksolve.cholesky([[4.0, 2.0], [2.0, 5.0]]),
        np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]])),
    )


def test_qr_modes_cover_numpy():
    assert set(QR_MODES) == {"reduced", "complete", "r", "raw"}


def test_same_pattern_returns_same_kernel():
    """Another signature of the same call pattern (here: another batch shape) is planned
    anew and finds the pattern's runner built."""
    from blocksolve.cpu import RUNNERS

    a = random_spd(np.random.default_rng(1), (4,), 5, np.float64)
    blocksolve.cholesky(a)
    runners = RUNNERS.values()
    hits = RUNNERS.hits
    blocksolve.cholesky(a.reshape(2, 2, 5, 5))
    assert RUNNERS.hits == hits + 1 and RUNNERS.values() == runners


def test_cache_info_and_clear(tmp_path, monkeypatch):
    blocksolve.cholesky(np.eye(3))
    info = blocksolve.cache_info()
    assert info["memory"]["cpu-runners"]["entries"] >= 1 and info["disk"]["cpu"]["path"]
    assert info["memory"]["plans"]["entries"] >= 1
    blocksolve.clear_cache()
    info = blocksolve.cache_info()
    assert all(memo["entries"] == 0 for memo in info["memory"].values()), info["memory"]
    np.testing.assert_array_equal(blocksolve.cholesky(np.eye(3)), np.eye(3))
    # A new size's first call runs its family's runner: rebuilt too, not kept by a plan.
    blocksolve.clear_cache()
    np.testing.assert_array_equal(blocksolve.cholesky(np.eye(7) * 4), np.eye(7) * 2)
    assert blocksolve.cache_info()["memory"]["cpu-runners"]["misses"] == 1


def test_dlpack_producer_round_trips():
    """Any DLPack producer on the host comes back as its own type (numpy here)."""

    class Producer:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    a = random_spd(np.random.default_rng(2), (2,), 3, np.float64)
    L = blocksolve.cholesky(Producer(a))
    np.testing.assert_allclose(to_numpy(L), np.linalg.cholesky(a))


class _StandIn:
    """A host DLPack producer that behaves as a torch tensor does where it matters here:
    ``requires_grad``/``detach()``, and export that fails inside DLPack for a dtype NumPy
    cannot take (torch's bfloat16 raises RuntimeError('Unsupported dtype in DLTensor.'))."""

    def __init__(self, array, requires_grad=False, dtype=None):
        self.array, self.requires_grad = array, requires_grad
        self.dtype = dtype or array.dtype

    def detach(self):
        return _StandIn(self.array, dtype=self.dtype)

    def __dlpack__(self, **kwargs):
        if self.requires_grad:  # as torch: "Can't export tensors that require gradient"
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if self.dtype != self.array.dtype:
            raise RuntimeError("Unsupported dtype in DLTensor.")
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_requires_grad_warns_that_no_gradient_flows():
    a = random_spd(np.random.default_rng(3), (2,), 3, np.float64)
    with pytest.warns(UserWarning, match=r"cholesky: argument 'a' requires grad, but no gradi"):
        L = blocksolve.cholesky(_StandIn(a, requires_grad=True))
    np.testing.assert_allclose(to_numpy(L), np.linalg.cholesky(a))


@pytest.mark.parametrize("name", OP_NAMES)
def test_dtype_dlpack_cannot_carry_gets_blocksolves_message(name):
    op = OPS[name]
    args = operands(op)
    args[0] = _StandIn(args[0], dtype="torch.bfloat16")
    first = op.inputs[0].name
    message = rf"{name}: array type torch.bfloat16 is unsupported in linalg \(argument '{first}'\)"
    with pytest.raises(TypeError, match=message):
        call(op, args)


def test_torch_tensors_requiring_grad_and_bfloat16():
    torch = pytest.importorskip("torch")
    a = random_spd(np.random.default_rng(4), (2,), 3, np.float64)
    t = torch.from_numpy(a).requires_grad_()
    with pytest.warns(UserWarning, match="requires grad") as caught:
        L = blocksolve.cholesky(t)
    assert caught[0].filename == __file__  # points at the caller's line
    assert isinstance(L, torch.Tensor) and not L.requires_grad
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(a))
    with pytest.raises(TypeError, match=r"array type torch.bfloat16 is unsupported in linalg"):
        blocksolve.cholesky(torch.from_numpy(a).to(torch.bfloat16))


def test_use_device_works_as_a_setter_and_in_a_with_block():
    from blocksolve import _backends

    def scenario():
        seen = []
        with blocksolve.use_device("cpu"):
            seen.append(_backends._forced_device.get())
        seen.append(_backends._forced_device.get())
        blocksolve.use_device("cpu")  # no with: in force from now on
        seen.append(_backends._forced_device.get())
        with blocksolve.use_device("cuda"):
            seen.append(_backends._forced_device.get())
        seen.append(_backends._forced_device.get())  # the setter's choice comes back
        np.testing.assert_array_equal(blocksolve.cholesky(4 * np.eye(2)), 2 * np.eye(2))
        blocksolve.use_device(None)
        seen.append(_backends._forced_device.get())
        return seen

    assert contextvars.copy_context().run(scenario) == [
        "cpu",
        None,
        "cpu",
        "cuda",
        "cpu",
        None,
    ]
    assert _backends._forced_device.get() is None  # nothing leaked into this context
    with pytest.raises(
        ValueError, match=r"use_device: device must be one of 'cpu', 'cuda', None; got 'gpu'"
    ):
        blocksolve.use_device("gpu")


@pytest.mark.skipif(gpu_available(), reason="this machine has a GPU")
def test_use_device_cuda_as_a_setter_sends_numpy_calls_to_the_gpu():
    """Without ``with``, ``use_device("cuda")`` is not silently ignored: here, with no GPU,
    the next NumPy call says why the GPU cannot be used."""

    def scenario():
        blocksolve.use_device("cuda")
        with pytest.raises(RuntimeError, match="GPU"):
            blocksolve.cholesky(np.eye(2))

    contextvars.copy_context().run(scenario)


class _Tagged(np.ndarray):
    """An ndarray subclass, as NumPy's linalg tests use."""


@pytest.mark.parametrize("name", OP_NAMES)
def test_ndarray_subclasses_come_back_as_the_reference_returns_them(name):
    # NumPy's functions wrap results with __array_wrap__ of one argument (a, or b for solve
    # and lstsq); SciPy's return base-class arrays.
    op = OPS[name]
    plain = operands(op, batch=())
    args = [x.view(_Tagged) for x in plain]
    result = call(op, args)
    results = result if isinstance(result, tuple) else (result,)
    for spec, out in zip(op.outputs, results):
        expected = _Tagged if op.wrap_from and spec.wrapped else np.ndarray
        if out.ndim:  # 0-d results (lstsq's rank) are NumPy scalars
            assert type(out) is expected, (spec.name, type(out))
    if op.wrap_from and len(args) > 1:  # only the designated argument counts, as in NumPy
        others = [
            x if s.name == op.wrap_from else x.view(np.ndarray) for s, x in zip(op.inputs, args)
        ]
        assert type(first_array(call(op, others))) is _Tagged
        swapped = [
            x.view(np.ndarray) if s.name == op.wrap_from else x for s, x in zip(op.inputs, args)
        ]
        assert type(first_array(call(op, swapped))) is np.ndarray


@pytest.mark.parametrize("mode", list(QR_MODES))
def test_qr_wraps_like_numpy_in_every_mode(mode):
    a = np.random.default_rng(1).standard_normal((4, 3)).view(_Tagged)
    got = blocksolve.qr(a, mode=mode)
    ref = np.linalg.qr(a, mode=mode)
    got, ref = (got, ref) if isinstance(got, tuple) else ((got,), (ref,))
    assert [type(g) for g in got] == [type(r) for r in ref]
