"""Sphinx configuration for blocksolve.

Build with ``sphinx-build -W -b html docs docs/_build/html``.  Nothing here
needs the network: the theme is Sphinx's bundled alabaster, and there is no
intersphinx.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document the checkout, even if another copy is installed
sys.path.insert(0, str(DOCS / "_ext"))

import blocksolve  # noqa: E402

project = "blocksolve"
author = "the blocksolve developers"
copyright = "2026, the blocksolve developers"
release = blocksolve.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "blocksolve_docs",
    "benchmark_charts",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = []
default_role = "py:obj"

# The API page lists every entry by hand in autosummary tables (no generated
# stub files in the source tree); blocksolve_docs checks none is missing.
autosummary_generate = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_theme_options = {
    "description": "NumPy/SciPy linear algebra on stacks of small matrices",
    "fixed_sidebar": True,
    "page_width": "1100px",
}
html_static_path = []
html_title = f"blocksolve {release}"
