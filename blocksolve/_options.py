"""Checks of the arguments that are not arrays, with one message format:
``"<function>: <name> must be <what it may be>; got <value>"``."""

from __future__ import annotations

import operator

import numpy as np

__all__ = ["invalid", "flag", "choice", "real_or_none"]


def invalid(function, name, expected, value, error=ValueError, hint=""):
    """The exception for ``name=value`` of ``function``, which must be ``expected``."""
    return error(f"{function}: {name} must be {expected}; got {value!r}{hint}")


def flag(function, name, value):
    """``value`` as a bool: a bool, or an integer as SciPy's flags accept (TypeError else)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    try:
        return bool(operator.index(value))
    except TypeError:
        raise invalid(function, name, "a bool", value, TypeError) from None


def choice(function, name, value, choices, hint=""):
    """``choices[value]``: one of the accepted spellings (a mapping to what each means)."""
    try:
        return choices[value]
    except (KeyError, TypeError):  # TypeError: an unhashable value
        accepted = ", ".join(map(repr, dict.fromkeys(choices)))
        raise invalid(function, name, f"one of {accepted}", value, hint=hint) from None


def real_or_none(function, name, value):
    """``value`` as a float, or None."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise invalid(function, name, "a float or None", value, TypeError) from None
