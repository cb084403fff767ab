"""The shortlist and score fusion: one home for combining the scores of several models.

- **The formula** (:func:`fuse`, :class:`Source`): a weighted sum of
  calibrated sources, each scoring all labels, a label subset or each
  document's candidates, with an optional per-document floor.
  ``PlantClassifier``'s shortlist fusion α·σ(a·s + b) + (1 − α)·σ(z) and
  :class:`~xplant.unseen.DescriptionFusion`'s m + w · cos are two members.
- **Calibration** (:func:`sigmoid`, :func:`logit`, :func:`calibrate`,
  :func:`fit_calibration`): each source on the probability scale.
- **The tail below the candidates** (:func:`tail_order`,
  :func:`tail_factor`, :func:`dense_scores`,
  :func:`top_k_from_candidates`, :func:`ranking_from_candidates`,
  :func:`map_from_candidates`, :data:`SCORE_FLOOR`).
- **The shortlist** (:func:`fit_shortlist`, :func:`rank_labels`,
  :func:`cross_fit_ranking`, :func:`training_candidates`,
  :data:`LINEAR_C_GRID`): the cheap ranker that proposes each document's
  candidates to PLANT's Stage 2.
- **The checks and helpers an estimator with a shortlist needs**
  (:func:`check_shortlist`, :func:`check_n_candidates`,
  :func:`check_fusion`, :func:`final_step`, :func:`is_frozen`,
  :func:`every_label_scores`, :func:`counts_above`).

Plain functions of NumPy arrays and scikit-learn estimators: no torch
needed. :class:`xplant.neural.PlantClassifier` (``shortlist=``,
``fusion=``) and :class:`xplant.unseen.DescriptionFusion` use them; see
:doc:`/guide/shortlist-fusion`.
"""

from ._calibration import calibrate, fit_calibration, logit, sigmoid
from ._fuse import FUSION_GRID, Source, check_fusion, fuse
from ._shortlist import (LINEAR_C_GRID, check_n_candidates, check_shortlist, cross_fit_ranking,
                         final_step, fit_shortlist, is_frozen, rank_labels, training_candidates)
from ._tail import (SCORE_FLOOR, counts_above, dense_scores, every_label_scores, map_from_candidates,
                    ranking_from_candidates, tail_factor, tail_order, top_k_from_candidates)

__all__ = [
    "FUSION_GRID",
    "LINEAR_C_GRID",
    "SCORE_FLOOR",
    "Source",
    "calibrate",
    "check_fusion",
    "check_n_candidates",
    "check_shortlist",
    "counts_above",
    "cross_fit_ranking",
    "dense_scores",
    "every_label_scores",
    "final_step",
    "fit_calibration",
    "fit_shortlist",
    "fuse",
    "is_frozen",
    "logit",
    "map_from_candidates",
    "rank_labels",
    "ranking_from_candidates",
    "sigmoid",
    "tail_factor",
    "tail_order",
    "top_k_from_candidates",
    "training_candidates",
]
