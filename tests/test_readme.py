"""The README's example runs and says what it claims."""

import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    text = README.read_text()
    example = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace = {}
    exec(compile(example, str(README), "exec"), namespace)
    L, a = namespace["L"], namespace["a"]
    assert np.isnan(L[7]).all()
    assert np.allclose(np.delete(L @ L.mT, 7, axis=0), np.delete(a, 7, axis=0))


def test_readme_lists_every_public_function():
    import blocksolve
    from blocksolve._op import all_ops

    text = README.read_text()
    for name in {op.name for op in all_ops()}:
        assert f"`{name}(" in text, name
        assert callable(getattr(blocksolve, name))


def test_readme_commands_are_self_contained():
    """Each of the two commands works in a new shell: the first creates and activates the
    virtual environment, the second activates it again before running the tests."""
    blocks = [b.strip() for b in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)]
    install, tests = blocks[0], blocks[1]
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install ")
    assert install.endswith("python -m blocksolve bench --quick")
    assert tests == ". .venv/bin/activate && python -m pytest -n 2"
