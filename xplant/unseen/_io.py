"""Saving and loading DescriptionRanker without pickle, in the linear models' format.

A DescriptionRanker is a step of :func:`xplant.linear.save_linear`'s folder
(``config.json`` and ``arrays.safetensors``) of kind
``"description_ranker"``: its fitted TF-IDF (vocabulary and IDF), the label
texts and their L2-normalised TF-IDF rows (CSR parts). The kind names no
module, so folders saved while the class lived in ``xplant.linear`` load
unchanged. Importing :mod:`xplant.unseen` registers it.
"""

import numpy as np
import scipy.sparse as sp

from ..linear._io import (_json_params, _label_space, _load_step, _save_step, _set_label_space,
                          register_step)
from ._description_ranker import DescriptionRanker

KIND = "description_ranker"


def _save_ranker(est, arrays, prefix, folder):
    """Its fitted TF-IDF, label texts and their vectors."""
    L = sp.csr_matrix(est.label_matrix_)
    for part in ("data", "indices", "indptr"):
        arrays[prefix + "label_matrix." + part] = getattr(L, part).astype(
            np.float64 if part == "data" else np.int64)
    return {"params": _json_params(est, skip=("vectorizer",)),
            "vectorizer": _save_step(est.vectorizer_, arrays, prefix + "vectorizer.", folder),
            "label_texts": list(est.label_texts_), "shape": list(L.shape), "k": int(est.k_),
            **_label_space(est, arrays, prefix)}


def _load_ranker(state, arrays, prefix, folder):
    # folders saved before ``passages`` existed scored whole documents only
    est = DescriptionRanker(**{"passages": "document", **state["params"]})
    _set_label_space(est, state, arrays, prefix)
    est.vectorizer_ = _load_step(state["vectorizer"], arrays, prefix + "vectorizer.", folder)
    est.label_texts_ = list(state["label_texts"])
    est.label_matrix_ = sp.csr_matrix(
        (arrays[prefix + "label_matrix.data"], arrays[prefix + "label_matrix.indices"],
         arrays[prefix + "label_matrix.indptr"]), shape=tuple(state["shape"]))
    est.k_ = int(state["k"])
    return est


register_step(KIND, DescriptionRanker, _save_ranker, _load_ranker)
