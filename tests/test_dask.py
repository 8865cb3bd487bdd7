"""Dask arrays in, Dask arrays out (``blocksolve/_dask.py``).

Every op of the table, on the threaded scheduler: lazy (nothing computed while
the graph is built), block for block equal to the eager call on the same data,
the declared shapes, dtypes and ``meta``, batch broadcasting against NumPy
operands, uneven chunks and many chunks, core dimensions rechunked with a
warning, the failure policies with global batch indices.  Then the same on a
two-process ``distributed.LocalCluster``, and CuPy chunks on a GPU.
"""

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402
from test_api import CALLS, operands  # noqa: E402

import blocksolve  # noqa: E402
from _helpers import assert_close, random_general, random_spd  # noqa: E402
from blocksolve._op import all_ops  # noqa: E402
from blocksolve.ops.qr import MODES as QR_MODES  # noqa: E402
from blocksolve.ops.svd import MODES as SVD_MODES  # noqa: E402

# The public keywords that select an op sharing its function with others.
_KEYWORDS = {id(op): {"mode": mode} for mode, op in QR_MODES.items()} | {
    id(op): {"compute_uv": vectors, "full_matrices": full}
    for (vectors, full), op in SVD_MODES.items()
}
CASES = [
    pytest.param(
        op,
        _KEYWORDS.get(id(op), {}),
        id="-".join([op.name, *map(str, _KEYWORDS.get(id(op), {}).values())]),
    )
    for op in all_ops()
]
BATCH_CHUNKS = (3, 5, 2)  # uneven


@pytest.fixture(autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


def _refuse_to_compute(*args, **kwargs):
    raise AssertionError("blocksolve computed something while building the graph")


def call(op, args, **kw):
    return CALLS[op.name](*args, **kw)


def arrays_of(result, op=None):
    """The arrays of a result, in order (``cho_factor``'s ``lower`` flag left out)."""
    if op is not None and op.name == "cho_factor":
        return [result[0]]
    if isinstance(result, tuple):
        return [x for part in result for x in arrays_of(part)]
    return [] if isinstance(result, bool) else [result]


def lazy_call(op, args, kw=None, **more):
    """``call`` with a scheduler that fails if anything is computed."""
    with dask.config.set(scheduler=_refuse_to_compute):
        return call(op, args, **(kw or {}), **more)


def assert_blocks_equal(lazy, eager, dtype, n=3):
    """Each block of ``lazy`` equals the matching slice of the eager result."""
    assert isinstance(lazy, da.Array)
    assert lazy.shape == eager.shape and lazy.dtype == eager.dtype
    assert type(lazy._meta) is np.ndarray and lazy._meta.dtype == eager.dtype
    assert lazy._meta.ndim == eager.ndim
    blocks = lazy.to_delayed().ravel()
    computed = dask.compute(*blocks)
    starts = [np.cumsum((0,) + c[:-1]) for c in lazy.chunks]
    for index, block in zip(np.ndindex(*lazy.numblocks), computed):
        where = tuple(slice(s[i], s[i] + c[i]) for s, c, i in zip(starts, lazy.chunks, index))
        assert isinstance(block, np.ndarray) and block.dtype == eager.dtype
        assert_close(block, eager[where], dtype, n=n)


# --------------------------------------------------------------------------- every op


@pytest.mark.parametrize("op, kw", CASES)
@pytest.mark.parametrize("others", ["numpy", "dask"])
def test_every_op_lazy_and_equal_block_for_block(op, kw, others):
    args = operands(op, batch=(10,))
    eager = call(op, args, **kw)
    lazy_args = [da.from_array(args[0], chunks=(BATCH_CHUNKS,) + args[0].shape[1:])]
    lazy_args += [
        da.from_array(x, chunks=(4,) + x.shape[1:]) if others == "dask" else x for x in args[1:]
    ]
    lazy = lazy_call(op, lazy_args, kw)
    assert isinstance(lazy, tuple) == isinstance(eager, tuple)
    if isinstance(eager, tuple):
        assert type(lazy) is type(eager)  # QRResult, LstsqResult, plain tuples
    if op.name == "cho_factor":  # the lower flag per matrix, as SciPy's batched cho_factor;
        # known without computing anything, so a NumPy array also for Dask input
        assert type(lazy[1]) is type(eager[1]) is np.ndarray
        np.testing.assert_array_equal(lazy[1], eager[1])
        assert lazy[1].shape == (10,) and not lazy[1].any()
    lazy_arrays, eager_arrays = arrays_of(lazy, op), arrays_of(eager, op)
    assert len(lazy_arrays) == len(eager_arrays) == len(op.outputs)
    for x, y in zip(lazy_arrays, eager_arrays):
        if op.name in ("eig", "eigvals"):  # NumPy's real-if-all-real needs the values;
            y = y.astype(x.dtype)  # Dask's stay complex, so that they stay lazy
        assert_blocks_equal(x, y, np.float64)
        if others == "numpy":
            assert x.chunks[0] == BATCH_CHUNKS


@pytest.mark.parametrize("op, kw", CASES)
def test_return_info_is_lazy_and_aligned_with_the_batch(op, kw):
    args = operands(op, batch=(10,))
    lazy_args = [da.from_array(x, chunks=(BATCH_CHUNKS,) + x.shape[1:]) for x in args]
    result, info = lazy_call(op, lazy_args, kw, return_info=True)
    assert isinstance(info, da.Array) and info.shape == (10,) and info.chunks == (BATCH_CHUNKS,)
    assert info.dtype == np.int32 and info._meta.dtype == np.int32
    eager_result, eager_info = call(op, args, **kw, return_info=True)
    np.testing.assert_array_equal(info.compute(), eager_info)
    for x, y in zip(arrays_of(result, op), arrays_of(eager_result, op)):
        assert_close(x.compute(), y, np.float64, n=3)


@pytest.mark.parametrize("op, kw", CASES)
def test_unbatched_and_empty_stacks(op, kw):
    for batch in [(), (0,), (2, 0)]:
        args = operands(op, batch=batch) if batch else [x[0] for x in operands(op, batch=(1,))]
        eager = arrays_of(call(op, args, **kw), op)
        lazy = arrays_of(lazy_call(op, [da.from_array(x) for x in args], kw), op)
        for x, y in zip(lazy, eager):
            if op.name in ("eig", "eigvals"):  # Dask's stay complex (see above)
                y = y.astype(x.dtype)[()]
            computed = x.compute()
            assert type(computed) is type(y), batch  # 0-d results: NumPy scalars, as eager
            assert x.shape == y.shape == computed.shape and x.dtype == y.dtype, batch
            assert_close(computed, y, np.float64, n=3)


# --------------------------------------------------------------------------- broadcasting, chunks


def test_batch_dimensions_broadcast_between_dask_and_numpy(rng):
    a = random_general(rng, (6, 1), 3, np.float64)
    b = rng.standard_normal((5, 3, 2))
    lazy = blocksolve.solve(da.from_array(a, chunks=(2, 1, 3, 3)), b)
    assert lazy.shape == (6, 5, 3, 2) and lazy.chunks[:2] == ((2, 2, 2), (5,))
    assert_blocks_equal(lazy, blocksolve.solve(a, b), np.float64)
    # The other way round, Dask right-hand sides against one NumPy matrix per row.
    lazy = blocksolve.solve(a, da.from_array(b, chunks=(2, 3, 2)))
    assert lazy.chunks[:2] == ((6,), (2, 2, 1))
    assert_blocks_equal(lazy, blocksolve.solve(a, b), np.float64)


def test_vector_right_hand_sides(rng):
    a = random_general(rng, (7,), 4, np.float64)
    b = rng.standard_normal(4)
    for lazy in [
        blocksolve.solve(da.from_array(a, chunks=(3, 4, 4)), b),
        blocksolve.solve(da.from_array(a, chunks=(3, 4, 4)), da.from_array(b)),
    ]:
        assert lazy.shape == (7, 4) and lazy.chunks == ((3, 3, 1), (4,))
        assert_blocks_equal(lazy, blocksolve.solve(a, b), np.float64)
    # NumPy 2 rule: a 1-D b is a vector only when b.ndim == 1, also for one Dask matrix.
    lazy = blocksolve.solve(da.from_array(a[0]), da.from_array(b))
    np.testing.assert_allclose(lazy.compute(), np.linalg.solve(a[0], b))


def test_many_chunks_and_a_two_dimensional_batch(rng):
    a = random_spd(rng, (40, 6), 3, np.float64)
    lazy = blocksolve.cholesky(da.from_array(a, chunks=(1, 4, 3, 3)))
    assert lazy.numblocks == (40, 2, 1, 1)
    np.testing.assert_allclose(lazy.compute(), np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)


def test_chained_calls_stay_lazy(rng):
    a = random_general(rng, (9,), 3, np.float64)
    b = rng.standard_normal((9, 3, 2))
    A = da.from_array(a, chunks=4)
    with dask.config.set(scheduler=_refuse_to_compute):
        x = blocksolve.lu_solve(blocksolve.lu_factor(A), b)
        y = blocksolve.cho_solve(blocksolve.cho_factor(A @ A.swapaxes(-1, -2)), b)
    assert_close(x.compute(), np.linalg.solve(a, b), np.float64, n=3)
    assert_close(y.compute(), np.linalg.solve(a @ a.mT, b), np.float64, factor=10, n=3)


def test_each_block_runs_once_and_only_at_compute(rng):
    a = random_spd(rng, (12,), 3, np.float64)
    runs = []

    def source(block):
        runs.append(block.shape)
        return block

    A = da.from_array(a, chunks=(4, 3, 3)).map_blocks(source, meta=np.empty((0, 0, 0)))
    Q, R = blocksolve.qr(A)
    L, info = blocksolve.cholesky(A, return_info=True)
    assert runs == []
    dask.compute(Q, R, L, info)
    assert sorted(runs) == [(4, 3, 3)] * 3  # shared by both calls, every output


def test_graph_holds_no_kernels():
    """Tasks refer to the op by name: what a worker process gets is small plain data."""
    A = da.from_array(random_spd(np.random.default_rng(0), (6,), 3, np.float64), chunks=3)
    L = blocksolve.cholesky(A)
    L.compute()  # the kernel exists in this process now; it must not enter the graph
    data = pickle.dumps(dict(L.__dask_graph__()))
    assert b"numba" not in data and b"Dispatcher" not in data
    assert len(data) < 20_000


def test_core_dimensions_split_are_rechunked_with_a_warning(rng):
    a = random_spd(rng, (4,), 4, np.float64)
    with pytest.warns(
        da.PerformanceWarning,
        match=r"cholesky: a is split into several chunks along its core .*"
        r"chunks \(\(2, 2\), \(4,\)\).* rechunks a to one chunk",
    ):
        L = blocksolve.cholesky(da.from_array(a, chunks=(2, 2, 4)))
    assert L.chunks == ((2, 2), (4,), (4,))
    np.testing.assert_allclose(L.compute(), np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # batch-only chunking: no warning
        blocksolve.cholesky(da.from_array(a, chunks=(1, 4, 4)))
    with pytest.warns(da.PerformanceWarning) as record:  # named at this line, however called
        blocksolve.cholesky(da.from_array(a, chunks=(2, 2, 4)))
        blocksolve.linalg.cholesky(da.from_array(a, chunks=(2, 2, 4)))
    assert [w.filename for w in record] == [__file__] * 2


@pytest.mark.parametrize("op, kw", CASES)
def test_meta_is_the_type_of_the_computed_blocks(op, kw):
    """A masked stack: the outputs an eager call wraps are masked, the others plain
    arrays -- and their meta says so before anything is computed."""
    args = [
        da.ma.masked_array(da.from_array(x, chunks=(BATCH_CHUNKS,) + x.shape[1:]))
        for x in operands(op, batch=(10,))
    ]
    result, info = lazy_call(op, args, kw, return_info=True)
    for x in (*arrays_of(result, op), info):
        assert type(x._meta) is type(x.compute())


@pytest.mark.parametrize("op, kw", [case for case in CASES if len(case.values[0].inputs) > 1])
def test_a_numpy_subclass_beside_a_dask_array_is_wrapped_as_in_an_eager_call(op, kw):
    """``solve(dask a, masked b)``: the results are those of ``solve(a, masked b)``, type
    included, block for block -- and the meta says so before anything is computed."""
    first, *others = operands(op, batch=(10,))
    masked = [np.ma.masked_array(x) for x in others]
    eager = call(op, [first, *masked], **kw)
    lazy = lazy_call(
        op, [da.from_array(first, chunks=(BATCH_CHUNKS,) + first.shape[1:]), *masked], kw
    )
    for x, expected in zip(arrays_of(lazy, op), arrays_of(eager, op)):
        computed = x.compute()
        assert type(x._meta) is type(computed) is type(expected)
        np.testing.assert_array_equal(np.asarray(computed), np.asarray(expected))


@pytest.mark.parametrize(
    "dtype, expected",
    [(np.float32, np.float32), (np.int64, np.float64), (np.complex64, np.complex64)],
)
def test_dtypes_and_meta_follow_the_eager_rule(dtype, expected):
    a = (4 * np.eye(3) + np.ones((5, 3, 3))).astype(dtype)
    b = np.ones((5, 3, 1), dtype)
    x, residuals, rank, s = blocksolve.lstsq(da.from_array(a, chunks=(2, 3, 3)), b)
    assert x.dtype == expected and x._meta.dtype == expected
    assert residuals.dtype == s.dtype == np.finfo(expected).dtype and rank.dtype == np.int32
    assert x.compute().dtype == expected and s.compute().dtype == s.dtype


# --------------------------------------------------------------------------- validation


def test_bad_input_is_refused_while_building_the_graph(rng):
    a = da.from_array(random_spd(rng, (4,), 3, np.float64), chunks=2)
    with pytest.raises(TypeError, match=r"cholesky: array type float16 is unsupported"):
        blocksolve.cholesky(a.astype(np.float16))
    with pytest.raises(np.linalg.LinAlgError, match=r"cholesky: a must be square"):
        blocksolve.cholesky(a[..., :2])
    with pytest.raises(
        ValueError, match=r"solve: b.shape\[-2\] = 4 does not match a.shape\[-2\] = 3"
    ):
        blocksolve.solve(a, np.ones((4, 4, 1)))
    with pytest.raises(
        ValueError,
        match=r"solve: batch dimensions do not broadcast; got shapes "
        r"a \(4, 3, 3\), b \(5, 3, 1\)",
    ):
        blocksolve.solve(a, np.ones((5, 3, 1)))
    with pytest.raises(TypeError, match=r"lu_solve: piv must be an integer array"):
        blocksolve.lu_solve((a, da.zeros((4, 3), chunks=2)), np.ones(3))
    with pytest.raises(ValueError, match=r"cholesky: a has unknown chunk sizes"):
        blocksolve.cholesky(a[a[:, 0, 0] > 0])


def test_check_finite_and_pivot_range_at_compute_time(rng):
    a = random_general(rng, (4,), 3, np.float64)
    a[3, 1, 1] = np.inf
    x = blocksolve.lu_factor(da.from_array(a, chunks=(2, 3, 3)))[0]
    with pytest.raises(ValueError, match=r"lu_factor: array must not contain infs or NaNs"):
        x.compute()
    lu = da.from_array(random_general(rng, (4,), 3, np.float64), chunks=(2, 3, 3))
    x = blocksolve.lu_solve((lu, np.full((4, 3), 7)), np.ones(3))
    with pytest.raises(ValueError, match=r"lu_solve: piv must hold indices in \[0, 3\)"):
        x.compute()


# --------------------------------------------------------------------------- failure policy


def _failing_stack(rng, failures):
    a = random_spd(rng, (4, 5), 3, np.float64)
    for index in failures:
        a[index] = -np.eye(3)
    return a, da.from_array(a, chunks=(2, 2, 3, 3))


def test_raise_names_global_batch_indices(rng):
    _, A = _failing_stack(rng, [(3, 2), (3, 3)])  # both in block (1, 1) of a 2-D batch
    with dask.config.set(scheduler=_refuse_to_compute):
        L = blocksolve.cholesky(A)
    with pytest.raises(
        blocksolve.LinAlgError,
        match=r"cholesky: 2 matrices of the batch failed, at batch indices "
        r"\(3, 2\) .*, \(3, 3\) .*\[Dask block \[2:4, 2:4\] of batch "
        r"shape \(4, 5\)",
    ) as error:
        L.compute()
    assert error.value.indices == [(3, 2), (3, 3)]
    assert isinstance(error.value, np.linalg.LinAlgError)
    # info is the block's, and block says where it lies: the failing matrices' statuses
    err = error.value
    assert err.block == (slice(2, 4), slice(2, 4)) and err.info.shape == (2, 2)
    for index in err.indices:
        assert err.info[tuple(i - s.start for i, s in zip(index, err.block))] == 1
    a, _ = _failing_stack(rng, [(3, 2)])
    with pytest.raises(blocksolve.LinAlgError) as eager:  # eager: the whole batch's info
        blocksolve.cholesky(a)
    assert eager.value.block is None and eager.value.info[3, 2] == 1


def test_raise_reports_a_failing_block_whichever_fails_first(rng):
    a, A = _failing_stack(rng, [(0, 1), (2, 4)])
    with pytest.raises(blocksolve.LinAlgError) as error:
        blocksolve.cholesky(A).compute()
    assert error.value.indices in ([(0, 1)], [(2, 4)])
    # Blocks without failures compute on their own.
    np.testing.assert_allclose(
        blocksolve.cholesky(A)[2:, :4].compute(),
        np.linalg.cholesky(a[2:, :4]),
        rtol=1e-12,
        atol=1e-12,
    )


def test_nan_and_ignore_and_scoped_policies_stay_lazy(rng):
    a, A = _failing_stack(rng, [(0, 1), (2, 4)])
    eager = blocksolve.cholesky(a, errors="nan")
    with blocksolve.errstate("nan"), dask.config.set(scheduler=_refuse_to_compute):
        L = blocksolve.cholesky(A)  # the scope in force when the graph is built counts
    np.testing.assert_array_equal(np.isnan(L.compute()), np.isnan(eager))
    assert_close(np.nan_to_num(L.compute()), np.nan_to_num(eager), np.float64, n=3)
    blocksolve.cholesky(A, errors="ignore").compute()  # does not raise


def test_warn_names_global_indices_once_per_failing_block(rng):
    _, A = _failing_stack(rng, [(0, 1), (3, 2), (3, 3)])
    with pytest.warns(blocksolve.LinAlgWarning) as record:
        blocksolve.cholesky(A, errors="warn").compute()
    messages = sorted(str(w.message) for w in record if w.category is blocksolve.LinAlgWarning)
    assert len(messages) == 2
    assert "at batch index (0, 1)" in messages[0] and "[Dask block [0:2, 0:2]" in messages[0]
    assert "at batch indices (3, 2)" in messages[1] and "(3, 3)" in messages[1]


def test_lu_factor_warns_by_default_like_scipy(rng):
    a = random_general(rng, (6,), 3, np.float64)
    a[4] = 0
    lu, _ = blocksolve.lu_factor(da.from_array(a, chunks=3))
    with pytest.warns(blocksolve.LinAlgWarning, match=r"lu_factor: 1 matrix .* index \(4,\)"):
        lu.compute()


def test_linalgerror_survives_pickling():
    error = blocksolve.LinAlgError(
        "cholesky: failed", [(3, 4)], np.array([0, 2]), (slice(3, 4), slice(3, 5))
    )
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is blocksolve.LinAlgError and str(copy) == "cholesky: failed"
    assert copy.indices == [(3, 4)] and copy.info.tolist() == [0, 2]
    assert copy.block == (slice(3, 4), slice(3, 5))


# --------------------------------------------------------------------------- import and detection


def test_importing_blocksolve_never_imports_dask():
    code = (
        "import sys, numpy as np, blocksolve; blocksolve.cholesky(np.eye(2)); "
        "print([m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- processes, GPU


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.mark.filterwarnings("ignore::blocksolve.LinAlgWarning")  # forwarded by design
def test_two_process_local_cluster(cluster_client, rng):
    """Worker processes compile or load their own kernels; failures come back global."""
    a = random_spd(rng, (40,), 3, np.float64)
    A = da.from_array(a, chunks=7)
    b = rng.standard_normal((40, 3, 2))
    L, x = cluster_client.compute(
        [blocksolve.cholesky(A), blocksolve.cho_solve(blocksolve.cho_factor(A), b)], sync=True
    )
    assert_close(L, np.linalg.cholesky(a), np.float64, n=3)
    assert_close(x, np.linalg.solve(a, b), np.float64, n=3)
    # The kernels ran in the worker processes, from their own caches.
    entries = cluster_client.run(
        lambda: blocksolve.cache_info()["memory"]["cpu-runners"]["entries"]
    )
    assert len(entries) == 2 and all(count >= 1 for count in entries.values())

    a[17] = -np.eye(3)
    with pytest.raises(
        blocksolve.LinAlgError, match=r"index \(17,\).*\[Dask block \[14:21\]"
    ) as error:
        cluster_client.compute(blocksolve.cholesky(da.from_array(a, chunks=7)), sync=True)
    assert error.value.indices == [(17,)]

    cluster_client.compute(
        blocksolve.cholesky(da.from_array(a, chunks=7), errors="warn"), sync=True
    )
    forwarded = [event for _, event in cluster_client.get_events("warn")]
    assert any(b"(17,)" in event["message"] for event in forwarded)


@pytest.mark.gpu
def test_cupy_chunks_run_on_the_gpu():
    """CuPy chunks in, CuPy chunks and meta out, equal to the NumPy result."""
    import cupy

    rng = np.random.default_rng(5)
    a = random_spd(rng, (64,), 8, np.float64)
    A = da.from_array(cupy.asarray(a), chunks=16, asarray=False)
    L, info = blocksolve.cholesky(A, return_info=True)
    assert type(L._meta) is cupy.ndarray and type(info._meta) is cupy.ndarray
    result = L.compute()
    assert type(result) is cupy.ndarray
    assert_close(result, np.linalg.cholesky(a), np.float64, n=8)
    with blocksolve.use_device("cuda"):  # NumPy chunks, computed on the GPU, NumPy back
        L = blocksolve.cholesky(da.from_array(a, chunks=16))
    assert type(L._meta) is np.ndarray
    assert_close(L.compute(), np.linalg.cholesky(a), np.float64, n=8)


@pytest.mark.gpu
def test_local_cuda_cluster_one_worker_per_gpu():
    """dask-cuda's cluster (one worker per visible GPU; here at least one) with CuPy chunks."""
    pytest.importorskip("dask_cuda")
    import cupy
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    rng = np.random.default_rng(6)
    a = random_spd(rng, (64,), 8, np.float64)
    with LocalCUDACluster() as cluster, Client(cluster) as client:
        A = da.from_array(a, chunks=16).map_blocks(cupy.asarray)
        L = client.compute(blocksolve.cholesky(A), sync=True)
    assert type(L) is cupy.ndarray
    assert_close(L, np.linalg.cholesky(a), np.float64, n=8)


def test_a_stream_is_refused_for_dask_arrays():
    """Each block runs where Dask schedules it: no one stream is the call's."""
    a = da.from_array(np.stack([np.eye(2)] * 4), chunks=(2, 2, 2))
    with pytest.raises(ValueError, match=r"cholesky: stream= does not apply to Dask arrays"):
        blocksolve.cholesky(a, stream=0)
