"""The package's structure: layers that import downward only, and imports at the top.

``pyproject.toml``'s import-linter contracts say which layer may import which;
the only imports inside functions are of the optional dependencies (and of the
CUDA kernel skeleton, which imports numba-cuda), so that ``import blocksolve``
needs none of them.
"""

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "blocksolve"

# Imported where they are needed, never by ``import blocksolve``: the optional
# dependencies, and blocksolve's modules that import one at their top.
_OPTIONAL = (
    "cupy",
    "cupyx",
    "nvmath",
    "numba.cuda",
    "dask",
    "distributed",
    "torch",
    "jax",
)
_NEEDING_NUMBA_CUDA = ("_skeleton", "_jacobi")  # blocksolve.cuda.kernels' device code


def _function_imports():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    yield path, node.lineno, [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    module = "." * node.level + (node.module or "")
                    dot = "" if module.endswith(".") else "."
                    yield path, node.lineno, [f"{module}{dot}{a.name}" for a in node.names]


def _optional(module):
    if module.startswith("."):
        return module.lstrip(".").split(".")[-1] in _NEEDING_NUMBA_CUDA
    return any(module == name or module.startswith(name + ".") for name in _OPTIONAL)


def test_only_optional_dependencies_are_imported_inside_functions():
    inside = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {module}"
        for path, line, modules in _function_imports()
        for module in modules
        if not _optional(module)
    ]
    assert not inside, "imports inside functions of what is not optional:\n" + "\n".join(inside)


def test_the_check_sees_an_import_inside_a_function():
    assert not _optional("scipy.linalg") and not _optional(".._op.op_for")
    assert _optional("cupy") and _optional("numba.cuda.dispatcher") and _optional("._skeleton")


@pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None, reason="import-linter is not installed"
)
def test_layers_import_downward_only():
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    done = subprocess.run(
        [sys.executable, "-c", command],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
