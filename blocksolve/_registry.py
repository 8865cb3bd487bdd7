"""Where a backend finds its routines: one module per op family.

Each backend (``blocksolve.cpu``, ``blocksolve.cuda``) is a package with one
public module per op family (``cholesky``, ``lu``, ``qr``, ...); each such
module declares the routines it implements in a ``ROUTINES`` mapping, from
the LAPACK-style routine name of :mod:`blocksolve._ops` to the backend's
declaration of it.  Adding a family is a new module in each backend and an
entry in the op table: nothing else lists it.
"""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["routines"]


def routines(package):
    """``{routine: declaration}`` from every public module of the backend ``package``.

    Parameters
    ----------
    package : str
        Dotted name of the backend package.

    Raises
    ------
    RuntimeError
        If two modules declare the same routine.
    """
    backend = importlib.import_module(package)
    found, where = {}, {}
    for module_info in sorted(pkgutil.iter_modules(backend.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{module_info.name}")
        for name, declaration in getattr(module, "ROUTINES", {}).items():
            if name in found:
                raise RuntimeError(
                    f"{package}: routine {name!r} is declared by both "
                    f"{where[name]} and {module.__name__}"
                )
            found[name], where[name] = declaration, module.__name__
    return found
