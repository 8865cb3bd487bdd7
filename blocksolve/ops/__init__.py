"""The public functions, one module per op family.

Each module declares its ops (:class:`blocksolve._op.Op`), registers what each
backend runs for their routines (:func:`blocksolve.cpu.register`,
:func:`blocksolve.cuda.register`), defines the public functions with their
docstrings and, where the Array API standard has them, their standard spellings
(:func:`._public.array_api`).  Every module here whose name does not start with
an underscore is a family: importing this package imports each, in name order,
and gathers their public names (a new family is one new module, nothing else
lists it).  It also registers the Dask adapter.
"""

import importlib
import pkgutil

from .. import _dask  # noqa: F401 - registers Dask arrays' lazy path with the executor

FAMILIES = tuple(
    importlib.import_module(f"{__name__}.{module.name}")
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda module: module.name)
    if not module.name.startswith("_")
)

__all__ = [name for family in FAMILIES for name in family.__all__]
globals().update({name: getattr(family, name) for family in FAMILIES for name in family.__all__})
