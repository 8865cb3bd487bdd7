"""How a kernel's batch is split over threads (:func:`blocksolve.cpu._jit.launch`).

A large batch is cut into chunks that the calling thread and the pool's threads take in
turn: every matrix is computed exactly once, the chunks are whole blocks, and a pool
thread that does not get to run leaves its chunks to the caller instead of holding the
call up.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import blocksolve
from _helpers import random_spd
from blocksolve.cpu import _jit


@pytest.fixture
def two_threads(monkeypatch):
    """``launch`` with two threads: the caller and a pool of one of its own."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-launch")
    monkeypatch.setattr(_jit, "num_threads", lambda: 2)
    monkeypatch.setattr(_jit, "_pool", pool)
    yield pool
    pool.shutdown(wait=True)


def _recording_kernel(log, on_chunk=None):
    def kernel(start, stop, out):
        log.append((start, stop, threading.current_thread().name))
        out[start:stop] += 1
        if on_chunk is not None:
            on_chunk(start, stop)

    return kernel


@pytest.mark.parametrize("batch", [64, 1000, 4099])
def test_every_matrix_once_in_whole_blocks(two_threads, batch):
    log, out = [], np.zeros(batch)
    _jit.launch(_recording_kernel(log), batch, _jit._PARALLEL_WORK, out)
    np.testing.assert_array_equal(out, 1)
    bounds = sorted((start, stop) for start, stop, _ in log)
    assert bounds[0][0] == 0 and bounds[-1][1] == batch
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))  # no gap, no overlap
    assert all(start % _jit._CHUNK_ALIGNMENT == 0 for start, _ in bounds)
    assert 2 <= len(bounds) <= 8  # one to four chunks per thread


def test_small_batches_run_in_the_calling_thread(two_threads):
    log, out = [], np.zeros(100)
    _jit.launch(_recording_kernel(log), 100, 1, out)
    assert log == [(0, 100, threading.current_thread().name)]


def test_a_pool_thread_that_cannot_run_leaves_its_chunks_to_the_caller(two_threads):
    """The pool's one thread is busy elsewhere until the caller has computed every chunk."""
    busy = threading.Event()
    two_threads.submit(busy.wait, 30)
    batch = 4096
    log, out = [], np.zeros(batch)

    def release_at_the_end(start, stop):
        if stop == batch:
            busy.set()

    _jit.launch(_recording_kernel(log, release_at_the_end), batch, _jit._PARALLEL_WORK, out)
    np.testing.assert_array_equal(out, 1)
    assert len(log) > 2 and {name for *_, name in log} == {threading.current_thread().name}


def test_an_error_in_a_chunk_is_raised_once_every_other_chunk_is_done(two_threads):
    def kernel(start, stop, out):
        if start == 0:
            raise FloatingPointError("chunk 0")
        out[start:stop] = 1

    batch = 4096
    first = _jit._chunk_size(batch, _jit._PARALLEL_WORK, 2, _jit._PARALLEL_WORK, 32)
    out = np.zeros(batch)
    with pytest.raises(FloatingPointError, match="chunk 0"):
        _jit.launch(kernel, batch, _jit._PARALLEL_WORK, out)
    assert not out[:first].any() and out[first:].all()


def test_a_chunked_batch_gives_the_matrices_results_alone(two_threads, rng):
    """The kernel's results do not depend on how the batch was cut (pairs: a stack of one
    would run on LAPACK)."""
    a = random_spd(rng, (700,), 16, np.float64)
    previous = blocksolve.set_specialization("wait")
    try:
        whole = blocksolve.cholesky(a)
        pairs = np.concatenate([blocksolve.cholesky(a[i : i + 2]) for i in range(0, 700, 2)])
    finally:
        blocksolve.set_specialization(previous)
    np.testing.assert_array_equal(whole, pairs)


def test_chunks_results_come_in_order_of_the_batch(two_threads):
    """What the LAPACK path's slices rely on: a result per chunk, in order."""
    found = _jit.in_chunks(lambda start, stop: (start, stop), 1000, 1, parallel_work=1)
    assert found[0][0] == 0 and found[-1][1] == 1000 and len(found) == 8
    assert all(a[1] == b[0] for a, b in zip(found, found[1:]))
