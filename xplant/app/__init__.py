"""The applications built on xplant's library: the ``xplant`` command line and its jobs.

``xplant run`` (the main job and any data source), ``fit``, ``evaluate``,
``predict``, ``ablate`` and ``train`` live here, apart from the estimators,
metrics and data loaders they use. Scripts import the estimators from
:mod:`xplant` and its subpackages, and run the jobs through the ``xplant``
command. The building blocks of ``xplant run`` that the benchmark scripts
reuse, so that a benchmark row is computed exactly as a run's row, are
public here (:data:`__all__`):

- the data: :func:`load_splits`, :func:`first_documents`;
- the rows: :func:`find_row`, :func:`build_model`, :func:`dataset_settings`,
  :func:`shortlist_params`, :func:`fit_with_dev`, :func:`row_scores`,
  :func:`evaluate_row`, :func:`save_row`, :data:`FUSED_SUFFIXES`;
- whole runs and their tables: :func:`run_models`, :func:`ablation_specs`,
  :func:`markdown_table`, :data:`MARKDOWN_COLUMNS`.

They are imported lazily: ``import xplant.app`` stays cheap.
"""

import importlib

_LAZY = {
    "FUSED_SUFFIXES": "._rows",
    "MARKDOWN_COLUMNS": "._tables",
    "ablation_specs": "._ablate",
    "build_model": "._run",
    "dataset_settings": "._rows",
    "evaluate_row": "._run",
    "find_row": "._rows",
    "first_documents": "._run",
    "fit_with_dev": "._run",
    "load_splits": "._run",
    "markdown_table": "._tables",
    "row_scores": "._fused",
    "run_models": "._run",
    "save_row": "._rows",
    "shortlist_params": "._fused",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'xplant.app' has no attribute {name!r}")


def __dir__():
    return __all__
