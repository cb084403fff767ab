"""XMTC metrics: one exact, sparse, tie-safe implementation."""

from ._propensity import PROPENSITY_PARAMETERS, inverse_propensity, label_frequency
from ._ranking import (
    mean_average_precision,
    ndcg_at_k,
    precision_at_k,
    psndcg_at_k,
    psp_at_k,
    r_precision_at_k,
    recall_at_k,
    sort_top_k,
    top_k_indices,
)

__all__ = [
    "PROPENSITY_PARAMETERS",
    "inverse_propensity",
    "label_frequency",
    "mean_average_precision",
    "ndcg_at_k",
    "precision_at_k",
    "psndcg_at_k",
    "psp_at_k",
    "r_precision_at_k",
    "recall_at_k",
    "sort_top_k",
    "top_k_indices",
]
