"""Sphinx configuration of the xplant documentation (``make docs``).

Pages are Markdown (MyST) and reST; the API reference is generated from the
numpydoc docstrings of every name in a public ``__all__`` (``_ext/xplant_api.py``),
the command-line reference from the argparse parsers of ``xplant`` (sphinx-argparse),
and the examples gallery from the scripts of ``../examples`` (sphinx-gallery), which
are run at every build that finds them changed. The build is nitpicky and treats
warnings as errors (``make docs``: ``-W --keep-going -n``).
"""

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))          # this checkout's xplant, before an installed one

import xplant  # noqa: E402

project = "xplant"
author = "xplant developers"
copyright = "xplant developers"
release = version = xplant.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",          # served from the site: see xplant_site (sphinx-mathjax-offline)
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",
    "xplant_api",
    "xplant_site",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# Text as written: "--config" stays two hyphens (a reader copies flags from the pages), and
# quotes stay straight in code-like prose.
smartquotes = False
root_doc = "index"
templates_path = ["_templates"]

# Pages of the earlier flat layout that the page tree replaces (getting-started, guide/*,
# benchmarks/*, design); they are not part of the site while they remain in the folder.
exclude_patterns = ["_build", "_ext", "_templates", "Thumbs.db", ".DS_Store",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json"]

# -- MyST ------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 4          # [text](page.md#a-heading) links resolve

# -- autodoc, autosummary, numpydoc ----------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"         # types are written in the numpydoc sections
autodoc_member_order = "bysource"
add_module_names = False
numpydoc_show_class_members = False   # the class template lists the API methods itself
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = True
# Words of numpydoc type strings that name no type: prose, and the symbols of shapes.
numpydoc_xref_ignore = {
    # prose
    "of", "or", "and", "shape", "optional", "default", "the", "a", "an", "with", "to", "in",
    "length", "same", "as", "per", "one", "each", "keyword", "only", "positional", "any",
    "from", "where", "such", "them", "self", "instance", "estimator", "fitted", "label",
    "lists", "binary", "ignored", "names", "token", "corpus", "sparse", "matrix", "long",
    "Hugging", "Face", "values", "text", "texts", "tensors", "sequences", "path", "labels",
    "document", "dataset", "candidate", "arrays", "indexables", "module", "mask", "id",
    "counts", "file_format", "tokenizer",
    # symbols of shapes and sizes
    "min", "max", "n", "m", "k", "b", "d", "h", "y", "B", "C", "H", "L", "N", "P", "S", "T", "V", "ks",
    "n_samples",
    "n_labels", "n_labels_", "n_docs", "n_features", "n_tokens", "n_tokens_", "n_tokens_i",
    "n_tok_i", "n_classes", "n_rows", "n_positions", "m_labels", "n_with_label",
    "n_vocabulary", "n_train", "n_all_labels", "max_id", "hidden_size", "embedding_dim",
    "n_parts", "n_texts", "n_codes", "n_known", "n_new", "n_seen", "n_unseen", "n_open",
    "n_outside", "nnz", "width", "int8", "n_sentences", "n_features", "float16",
    "X_dev", "Y_dev",
}
# External types: no inventory can be fetched offline, so each alias names the type's
# canonical path, and ``nitpick_ignore_regex`` below accepts those paths unlinked.
numpydoc_xref_aliases = {
    # numpydoc's defaults point into the inventories of Python and NumPy; offline, the types
    # are named plainly instead (and accepted unlinked by nitpick_ignore_regex below).
    "None": "None", "True": "True", "False": "False", "bool": "bool", "boolean": "bool",
    "list": "list", "tuple": "tuple", "str": "str", "string": "str", "dict": "dict",
    "float": "float", "int": "int", "callable": "callable",
    "iterable": "collections.abc.Iterable", "sequence": "collections.abc.Sequence",
    "mapping": "collections.abc.Mapping", "generator": "collections.abc.Generator",
    "contextmanager": "contextlib.contextmanager", "namedtuple": "collections.namedtuple",
    "array": "numpy.ndarray", "ndarray": "numpy.ndarray", "np.ndarray": "numpy.ndarray",
    "array-like": "numpy.typing.ArrayLike", "array_like": "numpy.typing.ArrayLike",
    "scalar": "numpy.generic", "RandomState": "numpy.random.RandomState",
    "np.random.RandomState": "numpy.random.RandomState", "np.inf": "numpy.inf",
    "np.nan": "numpy.nan", "numpy": "numpy", "dtype": "numpy.dtype",
    "int64": "numpy.int64", "int32": "numpy.int32", "float64": "numpy.float64",
    "float32": "numpy.float32", "bool_": "numpy.bool_", "Generator": "numpy.random.Generator",
    "sparse matrix": "scipy.sparse.spmatrix", "csr_matrix": "scipy.sparse.csr_matrix",
    "csr_array": "scipy.sparse.csr_array", "spmatrix": "scipy.sparse.spmatrix",
    "Bunch": "sklearn.utils.Bunch", "Pipeline": "sklearn.pipeline.Pipeline",
    "DataFrame": "pandas.DataFrame", "Tensor": "torch.Tensor", "tensor": "torch.Tensor",
    "nn.Module": "torch.nn.Module", "Module": "torch.nn.Module", "Path": "pathlib.Path",
    "path-like": "os.PathLike", "PathLike": "os.PathLike",
    "LongTensor": "torch.LongTensor", "FloatTensor": "torch.FloatTensor",
    "BoolTensor": "torch.BoolTensor", "History": "skorch.history.History",
    "TfidfVectorizer": "sklearn.feature_extraction.text.TfidfVectorizer",
}
# The xplant names are added at build time (``xplant_api.type_aliases``): ``TokenCorpus`` in a
# type links to the page of xplant.relevance.TokenCorpus.
_EXTERNAL = (r"(numpy|scipy|sklearn|torch|skorch|pathlib|os|collections|contextlib|typing|"
             r"transformers|deepspeed|peft|pandas|jinja2|matplotlib|dataclasses|argparse|enum|"
             r"tokenizers|re|io|html|json|numba|omikuji|napkinxc|libmultilabel|safetensors|yaml|"
             r"bitsandbytes)")
_BUILTINS = (r"(str|int|float|bool|bytes|dict|list|tuple|set|frozenset|object|None|True|False|"
             r"callable|type|slice|range|complex|Exception|ValueError|TypeError|KeyError|"
             r"RuntimeError|FileNotFoundError|FileExistsError|ImportError|OSError|UserWarning|"
             r"Warning|NotImplementedError|IndexError|AttributeError|ZeroDivisionError)")
nitpick_ignore_regex = [
    ("py:.*", _EXTERNAL + r"(\..*)?"),
    ("py:.*", _BUILTINS),        # Python's builtins: no inventory offline either
]

# -- sphinx-gallery --------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": re.escape(os.sep) + r"\w+\.py$",   # run every example
    "image_scrapers": ("matplotlib",),                      # each example draws its results
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 0,
    # no sg_execution_times page: sphinx-gallery writes it with jQuery, DataTables and
    # Bootstrap loaded from CDNs, and the site loads nothing from another host
    "write_computation_times": False,
}

# -- HTML ------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"xplant {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # every top-level page in the navbar, none under a "More" menu, and the search as an
    # icon beside them so that the navbar keeps one row at 1,400 px
    "header_links_before_dropdown": 8,
    "navbar_persistent": ["search-button"],
}
html_static_path = ["_static"]
html_css_files = ["xplant.css"]          # tables that fit the column
