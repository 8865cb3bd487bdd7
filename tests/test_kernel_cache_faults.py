"""The CPU kernels' disk cache and background compiler when the machine misbehaves.

A cache folder that cannot be written or read, a damaged cache file, a fork at
the wrong moment, a ``blocksolve`` in the current folder, a relative or
malformed environment: the call still returns the right results (with one
:class:`blocksolve.CacheWarning` where the cache failed it), never hangs and
never raises.  Scenarios that touch process state run in child processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import blocksolve
from blocksolve import _cache
from blocksolve.cpu import _compiled, _jit

ROOT = Path(__file__).resolve().parents[1]

# A child's check: cholesky and solve of a few matrices equal NumPy's, and what warned
# (9x9: the looped kernels, whose cache files the tests below damage; smaller real
# matrices run straight-line kernels).
CHECK = """
    import warnings
    import numpy as np, blocksolve
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 9, 9))
    a = x @ x.transpose(0, 2, 1) + 9 * np.eye(9)
    b = rng.standard_normal((3, 9, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        L, y = blocksolve.cholesky(a), blocksolve.solve(a, b)
    assert np.allclose(L, np.linalg.cholesky(a)) and np.allclose(y, np.linalg.solve(a, b))
    print("|".join(f"{w.category.__name__}: {w.message}" for w in caught))
"""


def _run(script, env=None, cwd=ROOT, timeout=240, prefix=(), flags=()):
    result = subprocess.run(
        [*prefix, sys.executable, *flags, "-c", textwrap.dedent(script)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "BLOCKSOLVE_SPECIALIZE": "wait", **(env or {})},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.rstrip("\n")


def _not_cholesky_or_lu(folder, names):
    return [
        name
        for name in names
        if (Path(folder) / name).is_file() and not name.startswith(("cholesky.", "lu."))
    ]


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory):
    """A cache folder holding the 9x9 cholesky and solve kernels of float64 (what the
    suite's cache has of them, the rest compiled now)."""
    folder = tmp_path_factory.mktemp("filled") / "cache"
    if (_cache.cache_dir() / "cpu").is_dir():
        shutil.copytree(_cache.cache_dir() / "cpu", folder / "cpu", ignore=_not_cholesky_or_lu)
    assert _run(CHECK, {"BLOCKSOLVE_CACHE_DIR": str(folder)}) == ""  # filled, no warning
    return folder


def test_a_cache_folder_that_is_a_file_compiles_in_memory_with_one_warning(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    warned = _run(CHECK, {"BLOCKSOLVE_CACHE_DIR": str(not_a_folder)}).split("|")
    assert len(warned) == 2  # reading and saving, once each
    assert warned[0].startswith("CacheWarning: blocksolve: cannot read a kernel from the cache")
    assert warned[1].startswith("CacheWarning: blocksolve: cannot save a kernel into the cache")
    assert "Set $BLOCKSOLVE_CACHE_DIR to a writable folder" in warned[1]


def _without_write_access():
    """How to run a child that cannot write a folder ``chmod a-w`` made read-only: as is
    for a normal user; for root, without the capability that ignores permissions."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot take write access away")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search", "--")


def test_a_read_only_cache_serves_its_kernels(filled_cache, tmp_path):
    read_only = tmp_path / "read-only"
    shutil.copytree(filled_cache, read_only)
    prefix = _without_write_access()
    subprocess.run(["chmod", "-R", "a-w", str(read_only)], check=True)
    try:
        out = _run(
            CHECK
            + """
    from blocksolve.cpu.kernels import cholesky
    print(sum(cholesky._potrf_kernel(9, True, True)._cache_hits.values()),
          sum(cholesky._potrf_kernel(9, True, True)._cache_misses.values()))
""",
            {"BLOCKSOLVE_CACHE_DIR": str(read_only)},
            prefix=prefix,
        )
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(read_only)], check=True)
    warned, counts = out.splitlines()
    assert warned == "" and counts == "1 0"  # loaded from the cache, nothing compiled


def test_a_damaged_cache_file_is_compiled_again_with_a_warning(filled_cache, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(filled_cache, damaged)
    indexes = list(damaged.rglob("cholesky*potrf_kernel*.nbi"))
    assert indexes
    for index in indexes:
        os.truncate(index, 20)
    warned = _run(CHECK, {"BLOCKSOLVE_CACHE_DIR": str(damaged)})
    assert warned.startswith("CacheWarning: blocksolve: cannot read a kernel from the cache")
    assert "blocksolve.clear_cache(disk=True) empties it" in warned
    assert _run(CHECK, {"BLOCKSOLVE_CACHE_DIR": str(damaged)}) == ""  # replaced: healed


def test_a_fork_after_a_threaded_call_computes_in_the_child():
    """The parent's thread pool does not survive the fork; the child starts its own."""
    out = _run(
        """
        import os, numpy as np, blocksolve
        from blocksolve.cpu import _jit
        a = np.eye(8) * 4 + np.ones((8, 8))
        batch = np.broadcast_to(a, (_jit._PARALLEL_WORK // 64 + 1, 8, 8)).copy()
        expected = blocksolve.cholesky(batch)  # on the pool's threads
        assert _jit._pool is not None
        pid = os.fork()
        if pid == 0:
            os._exit(0 if np.array_equal(blocksolve.cholesky(batch), expected) else 1)
        print(os.waitpid(pid, 0)[1])
    """,
        {"BLOCKSOLVE_NUM_THREADS": "2"},
        timeout=120,
    )
    assert out == "0"


def test_a_fork_waits_for_a_compilation_in_another_thread():
    """A child forked while another thread holds numba's compiler lock would wait for
    it for ever; the fork waits until the lock is free instead."""
    out = _run(
        """
        import os, threading, time, numpy as np, blocksolve
        from numba.core.compiler_lock import global_compiler_lock
        held = threading.Event()
        def compile_for_a_while():
            with global_compiler_lock:
                held.set()
                time.sleep(0.5)
        threading.Thread(target=compile_for_a_while).start()
        held.wait()
        pid = os.fork()  # waits for the lock
        if pid == 0:
            from blocksolve.cpu.kernels import cholesky  # the child needs the lock to load a kernel
            os._exit(0 if np.allclose(blocksolve.cholesky(np.eye(3) * 4), 2 * np.eye(3)) else 1)
        print(os.waitpid(pid, 0)[1])
    """,
        timeout=120,
    )
    assert out == "0"


def test_the_background_compiler_runs_this_blocksolve_in_a_session_of_its_own(tmp_path):
    """A ``blocksolve`` in the caller's working folder is not the worker's; a Ctrl-C at the
    terminal (the caller's session) does not reach the worker.  Meanwhile the calls run
    on LAPACK: the first is NumPy's result to the bit."""
    (tmp_path / "blocksolve.py").write_text("raise ImportError('the wrong blocksolve')\n")
    out = _run(
        """
        import os, numpy as np, blocksolve
        from blocksolve.cpu import _background, _compiled
        blocksolve.set_specialization("background")
        a = np.eye(5)[None].repeat(2, axis=0) * 4 + np.arange(25.0).reshape(5, 5) / 100
        a = a + a.transpose(0, 2, 1)
        first = blocksolve.cholesky(a)
        assert np.array_equal(first, np.linalg.cholesky(a))
        assert blocksolve.wait_for_kernels(timeout=200)
        worker = _background._Worker.current.process.pid
        after = blocksolve.cholesky(a)
        assert np.allclose(after, first)
        print([e.ready is not None for e in _compiled.entries()], os.getsid(worker) != os.getsid(0),
              _background.statistics()["compiled"] + _background.statistics()["loaded"])
    """,
        env={
            "PYTHONPATH": str(ROOT),
            "BLOCKSOLVE_SPECIALIZE": "background",
            # its own empty cache: a kernel already on disk would start no worker
            "BLOCKSOLVE_CACHE_DIR": str(tmp_path / "kernel-cache"),
        },
        cwd=tmp_path,
        flags=("-P",),
    )
    assert out == "[True] True 1"


def test_a_relative_cache_folder_stays_where_it_was_first_used(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BLOCKSOLVE_CACHE_DIR", "relative-cache-for-this-test")
    first = blocksolve.cache_dir()
    assert first == tmp_path / "relative-cache-for-this-test"
    monkeypatch.chdir(ROOT)
    assert blocksolve.cache_dir() == first


@pytest.mark.parametrize("value", ["abc", "2.5", "0", "-3"])
def test_a_malformed_thread_count_warns_and_uses_the_cpu_count(monkeypatch, value):
    monkeypatch.setenv("BLOCKSOLVE_NUM_THREADS", value)
    _jit.num_threads.cache.clear()
    try:
        with pytest.warns(
            RuntimeWarning,
            match=rf"\$BLOCKSOLVE_NUM_THREADS must be a positive "
            rf"integer; got '{value}', using",
        ):
            assert _jit.num_threads() == (os.cpu_count() or 1)
    finally:
        monkeypatch.delenv("BLOCKSOLVE_NUM_THREADS")
        _jit.num_threads.cache.clear()


@pytest.mark.parametrize(
    "value, mode", [("WAIT", "wait"), (" never ", "never"), ("", "background")]
)
def test_the_specialization_variable_takes_any_case_and_spaces(monkeypatch, value, mode):
    monkeypatch.setenv("BLOCKSOLVE_SPECIALIZE", value)
    assert _compiled._mode_from_environment() == mode


def test_a_malformed_specialization_variable_warns_and_uses_the_default(monkeypatch):
    monkeypatch.setenv("BLOCKSOLVE_SPECIALIZE", "later")
    with pytest.warns(
        RuntimeWarning,
        match=r"\$BLOCKSOLVE_SPECIALIZE must be one of "
        r"'background', 'wait', 'never'; got 'later'",
    ):
        assert _compiled._mode_from_environment() == "background"


def _damage(path, at=0.5, size=4096):
    """Garbage bytes in place of ``size`` of ``path``'s, from the fraction ``at`` of it on:
    the file keeps its size (as a disk error or a half-written copy leaves it)."""
    data = bytearray(path.read_bytes())
    start = min(int(len(data) * at), max(len(data) - size, 0))
    data[start : start + size] = os.urandom(len(data[start : start + size]))
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("suffix", [".nbc", ".nbi"])
def test_garbage_of_the_same_size_in_a_cache_file_is_a_miss(filled_cache, tmp_path, suffix):
    """A data file whose LLVM bitcode no longer parses, or an index that no longer
    unpickles: the kernel compiles again, with the warning, and the cache heals."""
    damaged = tmp_path / "damaged"
    shutil.copytree(filled_cache, damaged)
    files = list(damaged.rglob(f"cholesky*potrf_kernel*{suffix}"))
    assert files
    for path in files:
        _damage(path)
    warned = _run(CHECK, {"BLOCKSOLVE_CACHE_DIR": str(damaged)})
    assert warned.startswith("CacheWarning: blocksolve: cannot read a kernel from the cache")
    assert _run(CHECK, {"BLOCKSOLVE_CACHE_DIR": str(damaged)}) == ""  # replaced: healed


# The same check in background mode: every kernel ends ready (none failed for good).
BACKGROUND_CHECK = """
    import warnings
    import numpy as np, blocksolve
    from blocksolve.cpu import _compiled
    blocksolve.set_specialization("background")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 9, 9))
    a = x @ x.transpose(0, 2, 1) + 9 * np.eye(9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.array_equal(blocksolve.cholesky(a), np.linalg.cholesky(a))  # LAPACK's
        assert blocksolve.wait_for_kernels(timeout=200)
        assert np.allclose(blocksolve.cholesky(a), np.linalg.cholesky(a))  # the kernel's
    print(sorted({entry.state for entry in _compiled.entries()}))
    print("|".join(f"{w.category.__name__}: {w.message}" for w in caught))
"""


def test_a_damaged_entry_in_background_mode_is_compiled_not_failed(filled_cache, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(filled_cache, damaged)
    for path in damaged.rglob("cholesky*potrf_kernel*.nbc"):
        _damage(path)
    states, warned = _run(BACKGROUND_CHECK, {"BLOCKSOLVE_CACHE_DIR": str(damaged)}).split("\n", 1)
    assert states == "['ready']"
    assert warned.startswith("CacheWarning: blocksolve: cannot read a kernel from the cache")


def test_a_cache_that_cannot_be_written_compiles_in_memory_in_background_mode(tmp_path):
    """Nothing the worker compiled could be saved: the kernel compiles in this process,
    in memory, and is used; the warning says exactly that."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    output = _run(BACKGROUND_CHECK, {"BLOCKSOLVE_CACHE_DIR": str(not_a_folder)})
    states, warned = output.split("\n", 1)
    assert states == "['ready']"
    assert "CacheWarning: blocksolve: cannot save a kernel into the cache" in warned
    assert "kernels are compiled in memory, again in every new process" in warned
    assert "failed to compile" not in warned


@pytest.mark.parametrize("text, expected", [("", False), ("0", False), ("1", True), (" 1 ", True)])
def test_finish_at_exit_reads_its_variable(monkeypatch, text, expected):
    from blocksolve.cpu import _background

    monkeypatch.setenv("BLOCKSOLVE_FINISH_AT_EXIT", text)
    assert _background.finish_at_exit() is expected


def test_a_malformed_finish_at_exit_warns_and_stops_the_compiler(monkeypatch):
    from blocksolve.cpu import _background

    monkeypatch.setenv("BLOCKSOLVE_FINISH_AT_EXIT", "yes")
    with pytest.warns(RuntimeWarning, match=r"\$BLOCKSOLVE_FINISH_AT_EXIT must be 0 or 1"):
        assert _background.finish_at_exit() is False
