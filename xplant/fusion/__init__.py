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

Plain functions of NumPy arrays and scikit-learn estimators: no torch
needed. :class:`xplant.neural.PlantClassifier` (``shortlist=``,
``fusion=``) and :class:`xplant.unseen.DescriptionFusion` use them; see
docs/shortlist.md.
"""

from ._calibration import calibrate, fit_calibration, logit, sigmoid
from ._fuse import FUSION_GRID, Source, fuse
from ._shortlist import (LINEAR_C_GRID, cross_fit_ranking, fit_shortlist, rank_labels,
                         training_candidates)
from ._tail import (SCORE_FLOOR, dense_scores, map_from_candidates, ranking_from_candidates,
                    tail_factor, tail_order, top_k_from_candidates)

__all__ = [
    "FUSION_GRID",
    "LINEAR_C_GRID",
    "SCORE_FLOOR",
    "Source",
    "calibrate",
    "cross_fit_ranking",
    "dense_scores",
    "fit_calibration",
    "fit_shortlist",
    "fuse",
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
