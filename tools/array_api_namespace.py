"""An Array API namespace whose ``linalg`` is blocksolve's, for the standard's test suite.

``xp`` is ``array_api_strict`` (a strict namespace on the host, whose arrays blocksolve
takes through DLPack and gives back) with its ``linalg`` extension replaced by
:mod:`blocksolve.linalg`.  Run the suite's linalg module on it from a checkout of
https://github.com/data-apis/array-api-tests (with its ``array-api`` submodule)::

    ARRAY_API_TESTS_MODULE="exec('import sys; sys.path.insert(0, \\"$BLOCKSOLVE/tools\\"); \
from array_api_namespace import xp')" python -m pytest array_api_tests/test_linalg.py

(``$BLOCKSOLVE``: this repository's root.)  It needs ``hypothesis`` and ``ndindex``.
"""

import types

import array_api_strict

import blocksolve.linalg

xp = types.ModuleType("array_api_strict")
xp.__dict__.update(vars(array_api_strict))
xp.linalg = blocksolve.linalg
