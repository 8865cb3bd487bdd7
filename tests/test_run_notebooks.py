"""tools/run_notebooks.py, and the notebooks as committed: with outputs, plots included."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from _helpers import tool_module  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_committed_with_outputs_and_plots(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    shows = [cell for cell in code if "print(" in cell.source or "plt.show" in cell.source]
    assert all(cell.outputs for cell in shows)
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert not errors, errors
    images = [o for cell in code for o in cell.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= sum("plt.show()" in cell.source for cell in code)
    assert notebook.metadata["kernelspec"]["name"] == "python3"


@pytest.fixture(scope="module")
def runner():
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    return tool_module("run_notebooks")


def _notebook(path, *sources):
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(s) for s in sources],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    nbformat.write(notebook, path)
    return path


def test_run_notebooks_writes_outputs_checks_them_and_reports_errors(tmp_path, runner, capsys):
    good = _notebook(tmp_path / "good.ipynb", "print(6 * 7)")
    assert runner.main([str(good)]) == 1  # it runs, but was saved without outputs
    assert "saved without outputs" in capsys.readouterr().err
    assert runner.main(["--write", str(good)]) == 0
    written = nbformat.read(good, as_version=4)
    assert written.cells[0].outputs[0]["text"] == "42\n"
    assert written.metadata["kernelspec"]["name"] == "python3"
    assert "execution" not in written.cells[0].metadata  # no timestamps to commit
    assert runner.main([str(good)]) == 0
    assert nbformat.read(good, as_version=4) == written  # a plain run changes nothing

    bad = _notebook(tmp_path / "bad.ipynb", "raise ValueError('no')")
    assert runner.main(["--write", str(bad)]) == 1
    assert "ValueError" in capsys.readouterr().err
