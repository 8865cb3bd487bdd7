"""Sphinx directives that build blocksolve's reference tables from the code.

The op tables come from the declarations (:func:`blocksolve._op.all_ops`), the API
page's function lists from the op families (:mod:`blocksolve.ops`), the dtype tables from
:func:`blocksolve._normalize.compute_dtype`, so the documentation cannot
drift from what the library does.  A build check also warns (an error under
``sphinx-build -W``) when a name in ``blocksolve.__all__`` has no API entry.

Directives
----------
``.. blocksolve-ops-table::``
    One row per public function (one per ``qr`` mode): arguments and results
    with their core dimensions, the gufunc signature, the LAPACK routine,
    the default failure policy and the outputs the ``'nan'`` policy fills.
``.. blocksolve-failure-table::``
    What a non-zero ``info`` means, and what infs and NaNs in the input
    produce, per function.
``.. blocksolve-promotion-table::``
    Computation dtype for every pair of input dtypes.
``.. blocksolve-api::``
    One section per op family (:mod:`blocksolve.ops`): its title, a summary table
    of its public names, then their reference entries -- a new family appears
    with no edit here or in ``api.rst``.
``.. blocksolve-gpu-status::``
    Where the GPU path stands: what was verified and with which versions,
    and whether it has run on GPU hardware, in the words of
    ``blocksolve/cuda/constraints.txt`` (what ``python -m blocksolve info``
    prints).

The performance page's ``.. benchmark-results::`` lives in :mod:`benchmark_charts`.
"""

from __future__ import annotations

import itertools

import numpy as np
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

import blocksolve
from blocksolve._normalize import compute_dtype
from blocksolve._op import all_ops

logger = logging.getLogger(__name__)

# Words for the derived core dimensions of the ops.  Each entry is checked
# against the op's own rule at build time, so a changed rule fails the build.
DERIVED_SYMBOLS = {
    "p": ("``min(m, n)``", lambda d: min(d["m"], d["n"])),
    "r": (
        "``k`` when ``m > n``, else 0 (NumPy returns residuals only for over-determined systems)",
        lambda d: d["k"] if d["m"] > d["n"] else 0,
    ),
}
_SAMPLE_DIMS = [{"m": m, "n": n, "k": k} for m, n, k in itertools.product((1, 3, 5), repeat=3)]

_OUTPUT_DTYPE_WORDS = {
    "inexact": "",
    "real": " (real)",
    "complex": " (complex)",
    "int32": " (int32)",
}


def _named_ops():
    """``(label, op)`` for every op: one per function, per ``qr`` and ``svd`` mode and per
    structure ``solve`` runs apart."""
    for op in all_ops():
        yield f"``{op.label}``", op


def _check_derived(op):
    for symbol, rule in op.derived.items():
        if symbol not in DERIVED_SYMBOLS:
            raise ValueError(
                f"blocksolve_docs: no words for derived dimension {symbol!r} "
                f"of {op.name}; add it to DERIVED_SYMBOLS"
            )
        documented = DERIVED_SYMBOLS[symbol][1]
        for dims in _SAMPLE_DIMS:
            if rule(dict(dims)) != documented(dims):
                raise ValueError(
                    f"blocksolve_docs: the words for {symbol!r} in {op.name} "
                    f"no longer match its rule at {dims}"
                )


def _core(dims):
    return f"({', '.join(dims)})" if dims else "()"


def _arguments(op):
    parts = []
    for spec in op.inputs:
        text = f"``{spec.name}`` {_core(spec.core)}"
        if spec.kind == "index":
            text += " (integer)"
        if spec.vector_ok:
            text += f" or {_core(spec.core[:-1])} when 1-D"
        parts.append(text)
    return ", ".join(parts)


def _results(op):
    return ", ".join(
        f"``{o.name}`` {_core(o.core)}{_OUTPUT_DTYPE_WORDS[o.dtype]}" for o in op.outputs
    )


def _nan_filled(op):
    names = [f"``{o.name}``" for o in op.outputs if o.nan_on_failure]
    return ", ".join(names) if names else "none"


def _list_table(header, rows, widths=None):
    lines = [".. list-table::", "   :header-rows: 1"]
    if widths:
        lines.append(f"   :widths: {' '.join(map(str, widths))}")
    lines.append("")
    for row in [header, *rows]:
        first, *rest = row
        lines.append(f"   * - {first}")
        lines.extend(f"     - {cell}" for cell in rest)
    return lines


class _TableDirective(SphinxDirective):
    has_content = False

    def lines(self):
        raise NotImplementedError

    def run(self):
        container = nodes.container()
        self.state.nested_parse(
            StringList(self.lines(), source="blocksolve_docs"), self.content_offset, container
        )
        return container.children


class OpsTable(_TableDirective):
    """Arguments, results, signature, routine and policy of every op."""

    def lines(self):
        rows = []
        for label, op in _named_ops():
            _check_derived(op)
            rows.append(
                [
                    label,
                    _arguments(op),
                    _results(op),
                    f"``{op.signature}``",
                    f"``{op.routine}``",
                    f"``'{op.default_policy}'``",
                    _nan_filled(op),
                ]
            )
        symbols = [f"* ``{s}`` = {words}" for s, (words, _) in DERIVED_SYMBOLS.items()]
        return [
            *_list_table(
                [
                    "function",
                    "arguments",
                    "results",
                    "gufunc signature",
                    "routine",
                    "default policy",
                    "filled by ``'nan'``",
                ],
                rows,
            ),
            "",
            "Derived core dimensions:",
            "",
            *symbols,
        ]


class FailureTable(_TableDirective):
    """What a non-zero ``info`` code means, and what infs and NaNs do, for each function."""

    def lines(self):
        rows, seen = [], set()
        for label, op in _named_ops():
            if (op.name, op.failure) in seen:
                continue
            if not any(name == op.name for name, _ in seen):
                label = f"``{op.name}``"
            seen.add((op.name, op.failure))
            text = op.failure.template.replace("{k}", "k").replace("{k0}", "k-1")
            if op.name == "qr":
                text = "never fails"
            rows.append([label, f"``{op.reference}``", text, op.nonfinite])
        return _list_table(
            ["function", "reference", "message for ``info = k > 0``", "infs and NaNs in the input"],
            rows,
            widths=[14, 20, 30, 36],
        )


PROMOTION_INPUTS = ("bool", "int64", "float32", "float64", "complex64", "complex128")


class PromotionTable(_TableDirective):
    """Computation dtype of a two-operand call, for every pair of input dtypes."""

    def lines(self):
        rows = []
        for first in PROMOTION_INPUTS:
            row = [f"**{first}**"]
            for second in PROMOTION_INPUTS:
                arrays = {"a": np.empty(0, first), "b": np.empty(0, second)}
                row.append(compute_dtype("docs", arrays).name)
            rows.append(row)
        return _list_table(["``a`` \\\\ ``b``", *PROMOTION_INPUTS], rows)


def _families():
    """The op family modules of :mod:`blocksolve.ops`, in its order (by name)."""
    from blocksolve.ops import FAMILIES

    return list(FAMILIES)


class ApiFamilies(SphinxDirective):
    """Per op family: a section titled by its docstring's words before the first colon,
    an autosummary of its ``__all__``, and each name's reference entry."""

    def run(self):
        lines = []
        for module in _families():
            title = module.__doc__.split(":", 1)[0].strip().removeprefix("The ")
            title = title[0].upper() + title[1:]
            lines += [title, "-" * len(title), "", ".. autosummary::", ""]
            lines += [f"   {name}" for name in module.__all__]
            lines.append("")
            for name in module.__all__:
                value = getattr(blocksolve, name)
                if isinstance(value, type):  # a result type: a named tuple
                    lines += [f".. autoclass:: {name}", f"   :members: {', '.join(value._fields)}"]
                else:
                    lines.append(f".. autofunction:: {name}")
                lines.append("")
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="blocksolve.ops"), node)
        return node.children


def check_api_coverage(app, env):
    """Warn about public names without an API entry (``-W`` turns it into an error)."""
    documented = set(env.get_domain("py").objects)
    for name in blocksolve.__all__:
        if name.startswith("__"):
            continue
        if f"blocksolve.{name}" not in documented:
            logger.warning(f"blocksolve.{name} is public (in __all__) but has no API entry")


class GpuStatus(SphinxDirective):
    """A warning box: what the GPU path's last verification covered (constraints.txt)."""

    def run(self):
        from blocksolve.cli.constraints import read_constraints

        pinned, verified, also = read_constraints()
        not_run = "No run on GPU hardware" in verified
        title = "GPU status: " + (
            "verified without a GPU, not yet run on one" if not_run else "last verification"
        )
        versions = ", ".join(
            f"{name} {pinned[name]}"
            for name in ("nvmath-python", "nvidia-libmathdx-cu13", "numba-cuda")
            if name in pinned
        )
        text = [
            f"Verified: {verified}",
            "",
            f"Versions of that verification: {versions} (``blocksolve/cuda/constraints.txt``). "
            + also,
            "",
            "``python -m blocksolve info`` prints this status beside the versions installed "
            "(see :ref:`gpu-verification`).",
        ]
        box = nodes.admonition(classes=["warning"])
        box += nodes.title(text=title)
        self.state.nested_parse(StringList(text, source="constraints.txt"), 0, box)
        return [box]


def setup(app):
    app.add_directive("blocksolve-ops-table", OpsTable)
    app.add_directive("blocksolve-failure-table", FailureTable)
    app.add_directive("blocksolve-promotion-table", PromotionTable)
    app.add_directive("blocksolve-gpu-status", GpuStatus)
    app.add_directive("blocksolve-api", ApiFamilies)
    app.connect("env-check-consistency", check_api_coverage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
