"""Dataset loaders returning one fixed label space, and what was done.

Every loader returns a :class:`sklearn.utils.Bunch` with ``texts`` (list of
str), ``Y`` (CSR, int64 {0, 1}), ``label_names``, ``ids``,
``label_frequency`` (positives per label in the loaded split) and
``record`` (source, split, label policy, counts). ``return_X_y=True`` gives
``(texts, Y)``. The label space is the sorted union of the labels of all
official splits, so every split has the same columns.
"""

from ._codiesp import load_codiesp, load_codiesp_evidence, parse_positions
from ._eurlex import load_eurlex57k
from ._label_space import align_label_space
from ._mimic import format_icd_code, load_mimic
from ._user import read_labelled_texts
from ._xc import dump_xc, load_xc

__all__ = [
    "align_label_space",
    "dump_xc",
    "format_icd_code",
    "load_codiesp",
    "load_codiesp_evidence",
    "load_eurlex57k",
    "load_mimic",
    "load_xc",
    "parse_positions",
    "read_labelled_texts",
]
