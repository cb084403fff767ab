"""XMTC metrics: one exact, sparse, tie-safe implementation.

Ranking metrics (P@k, R@k, RP@k, nDCG@k, PSP@k, PSnDCG@k, MAP) take CSR or
dense ``y_true`` and either scores or precomputed top-k label indices;
classification metrics (F1 with explicit averaging and label policy, AUC,
frequency buckets) take 0/1 predictions; decision rules turn scores into
predictions; scorers plug all of it into scikit-learn model selection;
``xmtc_report`` gathers the numbers every results table uses.
"""

from ._classification import (
    AUCResult,
    bucketed_f1,
    f1_score,
    per_label_scores,
    precision_score,
    recall_score,
    roc_auc,
    tail_f1,
)
from ._decision import (
    select_k,
    select_label_thresholds,
    select_threshold,
    threshold_decision,
    top_k_decision,
)
from ._decision_rule import DECISION_RULES, DecisionRule, apply_rule, check_rule, choose_rule
from ._groups import group_ranking_metrics
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
from ._report import F1_BUCKET_EDGES, xmtc_report
from ._scorer import (XMTCScorer, get_scorer, get_scorer_names, make_xmtc_scorer, pad_scores,
                      split_metric_name)
from ._validation import check_k

__all__ = [
    "check_k",
    "AUCResult",
    "F1_BUCKET_EDGES",
    "PROPENSITY_PARAMETERS",
    "XMTCScorer",
    "bucketed_f1",
    "f1_score",
    "get_scorer",
    "get_scorer_names",
    "group_ranking_metrics",
    "inverse_propensity",
    "label_frequency",
    "make_xmtc_scorer",
    "pad_scores",
    "split_metric_name",
    "mean_average_precision",
    "ndcg_at_k",
    "per_label_scores",
    "precision_at_k",
    "precision_score",
    "psndcg_at_k",
    "psp_at_k",
    "r_precision_at_k",
    "recall_at_k",
    "recall_score",
    "roc_auc",
    "DECISION_RULES",
    "DecisionRule",
    "apply_rule",
    "check_rule",
    "choose_rule",
    "select_k",
    "select_label_thresholds",
    "select_threshold",
    "sort_top_k",
    "tail_f1",
    "threshold_decision",
    "top_k_decision",
    "top_k_indices",
    "xmtc_report",
]
