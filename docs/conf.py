"""Sphinx configuration of the calipers documentation.

Build (from the repository root; the ``docs`` extra installs what it needs)::

    pip install ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

``CALIPERS_DOCS_QUICK=1`` runs only the gallery example(s) matching
``CALIPERS_DOCS_QUICK_PATTERN`` (default: the reliability-diagram example);
the other examples are rendered without their output. The build needs no
network: no intersphinx inventories are downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
# the source tree, for a build from a checkout without an installed calipers
if (ROOT / "src" / "calipers").is_dir():
    sys.path.insert(0, str(ROOT / "src"))

import calipers  # noqa: E402

# -- project -------------------------------------------------------------------

project = "calipers"
author = "calipers developers"
copyright = "calipers developers"
version = release = calipers.__version__

# -- extensions ----------------------------------------------------------------

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinxcontrib.bibtex",
    "citations",  # docs/_ext/citations.py: "Guo et al. 2017" -> the bibliography
    "sourcelinks",  # docs/_ext/sourcelinks.py: each [source] link on its def/class line
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "**/README.md",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.json",
    "auto_examples/*.md5",
]
templates_path = ["_templates"]

# -- MyST (Markdown pages) -------------------------------------------------------

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3

# -- autodoc / autosummary / numpydoc -------------------------------------------

autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types
autodoc_member_order = "bysource"
autodoc_default_options: dict[str, object] = {}
# calipers.stream.torchmetrics subclasses torchmetrics.Metric; without the optional
# dependency its page is built from mocked imports
if importlib.util.find_spec("torchmetrics") is None:
    autodoc_mock_imports = ["torch", "torchmetrics"]
autoclass_content = "class"
add_module_names = False

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True
numpydoc_validation_checks: set[str] = set()

# -- bibliography ----------------------------------------------------------------

bibtex_bibfiles = ["references.bib"]
bibtex_default_style = "plain"
bibtex_reference_style = "author_year"
bibtex_cite_id = "cite-{key}"  # the anchors docs/_ext/citations.py links to
citations_bibfile = "references.bib"
citations_bibliography_doc = "references"

# -- gallery ---------------------------------------------------------------------

QUICK = os.environ.get("CALIPERS_DOCS_QUICK", "") not in {"", "0", "false", "False"}
QUICK_PATTERN = os.environ.get("CALIPERS_DOCS_QUICK_PATTERN", r"plot_reliability_diagram\.py")
# the training-monitoring example needs PyTorch and torchmetrics (the torchmetrics extra)
IGNORE = r"__init__\.py|/_"
if importlib.util.find_spec("torch") is None or importlib.util.find_spec("torchmetrics") is None:
    IGNORE += r"|plot_training_monitoring\.py"

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": QUICK_PATTERN if QUICK else r"plot_",
    "ignore_pattern": IGNORE,
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "write_computation_times": False,
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "doc_module": ("calipers",),
    "reference_url": {"calipers": None},
    "abort_on_example_error": True,
    "capture_repr": ("_repr_html_", "__repr__"),
}

# examples run on a headless machine
os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")

# -- HTML --------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"calipers {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    # the sidebar lists the section's pages, not every API page under it (and builds faster)
    "collapse_navigation": True,
    "navigation_depth": 2,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_context = {"default_mode": "light"}
