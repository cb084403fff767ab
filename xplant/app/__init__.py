"""The applications built on xplant's library: the ``xplant`` command line and its jobs.

``xplant run`` (the main job and any data source), ``fit``, ``evaluate``,
``predict``, ``ablate`` and ``train`` live here, apart from the estimators,
metrics and data loaders they use. Scripts import the estimators from
:mod:`xplant` and its subpackages, and run the jobs through the ``xplant``
command. The building blocks of ``xplant run`` that the benchmark scripts
reuse, so that a benchmark row is computed exactly as a run's row, are
public here (``__all__``):

- the data: :func:`load_splits`, :func:`first_documents`;
- the rows: :func:`find_row`, :func:`build_model`, :func:`dataset_settings`,
  :func:`shortlist_params`, :func:`row_params` (the two together, as the
  run fits a row), :func:`fit_with_dev`, :func:`row_scores`,
  :func:`evaluate_row`, :func:`save_row`, :data:`FUSED_SUFFIXES`,
  :data:`DESCRIPTION_FIELDS` (the label-text fields of a training split
  that the description source reads);
- whole runs and their tables: :func:`run_models`, :func:`ablation_specs`,
  :func:`markdown_table`, :data:`MARKDOWN_COLUMNS`.

None of them imports torch.
"""

from ._ablate import ablation_specs
from ._fused import DESCRIPTION_FIELDS, row_params, row_scores, shortlist_params
from ._rows import FUSED_SUFFIXES, dataset_settings, find_row, save_row
from ._build import build_model, fit_with_dev
from ._results import evaluate_row
from ._run import run_models
from ._splits import first_documents, load_splits
from ._tables import MARKDOWN_COLUMNS, markdown_table

__all__ = [
    "DESCRIPTION_FIELDS",
    "FUSED_SUFFIXES",
    "MARKDOWN_COLUMNS",
    "ablation_specs",
    "build_model",
    "dataset_settings",
    "evaluate_row",
    "find_row",
    "first_documents",
    "fit_with_dev",
    "load_splits",
    "markdown_table",
    "row_params",
    "row_scores",
    "run_models",
    "save_row",
    "shortlist_params",
]
