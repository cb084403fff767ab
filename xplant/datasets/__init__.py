"""Dataset loaders returning one fixed label space, and what was done.

Every loader returns a :class:`sklearn.utils.Bunch` with ``texts`` (list of
str), ``Y`` (CSR, int64 {0, 1}), ``label_names``, ``ids``,
``label_frequency`` (positives per label in the loaded split) and
``record`` (source, split, label policy, counts). ``return_X_y=True`` gives
``(texts, Y)``.
"""

from ._codiesp import load_codiesp, load_codiesp_evidence
from ._eurlex import load_eurlex57k

__all__ = ["load_codiesp", "load_codiesp_evidence", "load_eurlex57k"]
