"""Execute every notebook under notebooks/ headless; exit non-zero on any error.

Each notebook runs top to bottom in a fresh kernel of *this* Python
interpreter (so a virtual environment's blocksolve is the one tested), with
its own folder as the working directory and a time limit per cell.

The notebooks are committed *with* their outputs (plots included), so that
they can be read without running them.  By default the notebooks on disk are
not modified: the run only checks that they execute, and that each holds
outputs.  ``--write`` saves the fresh outputs into the notebooks, to be
committed.  Needs the ``notebooks`` extra (nbclient, nbformat, ipykernel,
matplotlib, dask).

Usage::

    python tools/run_notebooks.py [--timeout SECONDS] [--write] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAME = "blocksolve-notebooks"
# Jupyter's inline backend: headless, and figures are rendered into the outputs,
# so a plotting error fails the run (whatever $MPLBACKEND the caller has).
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def _kernel_spec_dir(parent):
    """A kernelspec running ipykernel in this interpreter, whatever else is installed."""
    spec_dir = Path(parent) / KERNEL_NAME
    spec_dir.mkdir()
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return str(parent)


def has_outputs(notebook):
    """True if a code cell of ``notebook`` holds outputs."""
    return any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")


def run_notebook(path, timeout, kernel_dirs, write=False):
    """Execute one notebook; return ``None`` on success or a short error text.  With
    ``write``, save it with the new outputs (its own kernelspec kept)."""
    notebook = nbformat.read(path, as_version=4)
    committed_with_outputs = has_outputs(notebook)
    kernelspec = notebook.metadata.get("kernelspec")
    manager = AsyncKernelManager(
        kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernel_dirs])
    )
    client = NotebookClient(
        notebook,
        km=manager,
        timeout=timeout,
        kernel_name=KERNEL_NAME,
        record_timing=False,  # no timestamps in the committed notebooks
        extra_arguments=["--InteractiveShell.colors=nocolor"],
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute(env={**os.environ, "MPLBACKEND": INLINE_BACKEND})
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        return str(error)
    if write:
        if kernelspec is not None:
            notebook.metadata["kernelspec"] = kernelspec
        nbformat.write(notebook, path)
    elif not committed_with_outputs:
        return (
            "the notebook ran, but is saved without outputs; save them for readers with "
            "python tools/run_notebooks.py --write"
        )
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "notebooks",
        nargs="*",
        type=Path,
        help="notebooks to run (default: every notebooks/**/*.ipynb)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300, help="time limit per cell, in seconds (default 300)"
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="save the new outputs into the notebooks (to commit them)",
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(
        p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
    )
    if not paths:
        print("run_notebooks: no notebooks found", file=sys.stderr)
        return 1
    failures = []
    with tempfile.TemporaryDirectory() as kernel_dirs:
        _kernel_spec_dir(kernel_dirs)
        for path in paths:
            start = time.perf_counter()
            error = run_notebook(path.resolve(), args.timeout, kernel_dirs, args.write)
            status = "ok" if error is None else "FAILED"
            print(f"{status:6} {path} ({time.perf_counter() - start:.1f} s)", flush=True)
            if error is not None:
                print(error, file=sys.stderr)
                failures.append(path)
    if failures:
        print(f"run_notebooks: {len(failures)} of {len(paths)} notebooks failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
