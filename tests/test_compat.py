"""Every private API blocksolve uses, checked on the installed libraries.

Each ``blocksolve/_compat/<library>.py`` names what it uses and the versions it
was checked on; these tests fail -- loudly, naming the library and the name --
when an installed version no longer has what blocksolve relies on, instead of
letting a fallback hide it.
"""

import importlib.util

import numba
import numpy as np
import pytest

from blocksolve._compat import numba as numba_compat
from blocksolve._compat import numpy as numpy_compat


def _version(text):
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def test_numpy_gufuncs_have_the_signatures_numpy_linalg_calls():
    if _version(np.__version__) < (2, 1):
        pytest.skip("NumPy 2.0 names its SVD gufuncs by shape; the public function answers")
    gufuncs = numpy_compat._umath_linalg
    assert gufuncs is not None, f"numpy {np.__version__}: numpy.linalg._umath_linalg is gone"
    for name, call in numpy_compat.CALLS.items():
        gufunc = getattr(gufuncs, name, None)
        assert gufunc is not None, f"numpy {np.__version__}: no gufunc _umath_linalg.{name}"
        for signature in (call.real, call.complex):
            assert signature in gufunc.types, (
                f"numpy {np.__version__}: _umath_linalg.{name} has no loop {signature}"
            )


def test_numba_private_names_exist():
    from numba import _dispatcher
    from numba.core import caching

    assert callable(_dispatcher.compute_fingerprint)
    assert numba_compat.fingerprint(np.zeros((2, 3))) is not None
    for name in ("_CacheLocator", "_SourceFileBackedLocatorMixin", "CacheImpl"):
        assert hasattr(caching, name), f"numba {numba.__version__}: no caching.{name}"
    assert isinstance(caching.CacheImpl._locator_classes, list)


def test_numba_compiles_without_reference_counts_when_asked():
    def transposed_corner(x):  # a view: numba counts its reference
        return x.T[0, 1]

    counted = numba.njit(transposed_corner)
    uncounted = numba.njit(**numba_compat.NO_REFERENCE_COUNTS)(transposed_corner)
    x = np.arange(4.0).reshape(2, 2)
    assert counted(x) == uncounted(x) == 2.0
    assert "NRT_decref" in "".join(counted.inspect_llvm().values())
    assert "NRT_decref" not in "".join(uncounted.inspect_llvm().values()), (
        f"numba {numba.__version__}: _nrt=False no longer drops reference counts"
    )


def test_numba_dispatcher_internals_exist(tmp_path, monkeypatch):
    """A ``cache=True`` dispatcher has what :func:`load_from_disk` and the cache's lock
    and fault handling reach into."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    source = tmp_path / "compat_kernel.py"
    source.write_text("import numba\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    spec = importlib.util.spec_from_file_location("compat_kernel", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dispatcher = module.twice
    cache = numba_compat.disk_cache(dispatcher)
    assert callable(cache.load_overload) and callable(cache.save_overload)
    assert numba_compat.index_path(dispatcher)
    assert dispatcher(2) == 4  # compiles and saves
    numba_compat.reload_index(dispatcher)
    (signature,) = dispatcher.overloads
    for name in ("_cache_hits", "targetctx", "add_overload", "overloads"):
        assert hasattr(dispatcher, name), f"numba {numba.__version__}: no Dispatcher.{name}"
    assert numba_compat.load_from_disk(dispatcher, signature)


@pytest.mark.skipif(
    importlib.util.find_spec("numba_cuda") is None, reason="numba-cuda is not installed"
)
def test_numba_cuda_private_names_exist():
    from numba.cuda import dispatcher
    from numba.cuda.simulator.cudadrv import devicearray

    assert hasattr(dispatcher, "_Kernel"), "numba-cuda: no numba.cuda.dispatcher._Kernel"
    assert hasattr(devicearray, "FakeCUDAArray"), "numba-cuda: no simulator FakeCUDAArray"
    # The argument layout blocksolve packs is _prepare_args's (compared byte for byte with
    # it by the codegen tests, which also build a _Kernel and read its instance attributes).
    assert callable(getattr(dispatcher._Kernel, "_prepare_args", None)), (
        "numba-cuda: _Kernel has no _prepare_args"
    )


@pytest.mark.skipif(
    importlib.util.find_spec("nvmath") is None, reason="nvmath-python is not installed"
)
def test_nvmath_private_names_exist():
    """Without a CUDA driver ``nvmath.device`` does not import: the names are read from its
    source files (the code-generation tests exercise them through a stub driver)."""
    spec = importlib.util.find_spec("nvmath")
    root = spec.submodule_search_locations[0]
    with open(f"{root}/device/cusolverdx.py") as solver:
        assert "def compile_solver_execute(" in solver.read()
    with open(f"{root}/device/cusolverdx_numba.py") as glue:  # calls it through its global
        text = glue.read()
        assert "    compile_solver_execute,\n" in text and "= compile_solver_execute(" in text
    with open(f"{root}/device/common_cuda.py") as common:
        text = common.read()
        assert "class Code" in text and "class ISAVersion" in text
    with open(f"{root}/_utils.py") as utils:
        assert "def get_nvrtc_version(" in utils.read()
