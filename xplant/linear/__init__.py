"""Classical XMTC baselines in scikit-learn style.

- :class:`FrequencyPrior`: rank labels by training frequency.
- :class:`OneVsRestLinear`: one linear model per label, pruned sparse weights.
- :class:`MentionMatcher`: labels found by the mentions coders marked as
  their evidence (gold spans), scored by each mention's reliability.
- :func:`make_tfidf_ovr`, :func:`make_tfidf_logistic`: TF-IDF pipelines.
- :func:`predict_top_k`: top-k labels of any fitted model or Pipeline.
- :func:`save_linear`, :func:`load_linear`: save and load any of them
  without pickle (JSON + safetensors; trees in their own format).
- Optional wrappers, each behind an extra: :class:`NapkinXCPLT`,
  :class:`OmikujiTrees` (``xplant[trees]``), :class:`LibMultiLabelLinear`
  (``xplant[libmultilabel]``).

The rankers of labels never seen in training (``DescriptionRanker``,
``DescriptionFusion``) live in :mod:`xplant.unseen`.
"""

from ._base import check_label_matrix, predict_top_k, top_k_dense
from ._io import LINEAR_FORMAT, load_linear, save_linear
from ._mentions import MentionMatcher
from ._ovr import EMPTY_LABEL_SCORE, OneVsRestLinear, fit_one_vs_rest
from ._pipelines import TFIDF_DEFAULTS, make_tfidf_logistic, make_tfidf_ovr
from ._prior import FrequencyPrior
from ._wrappers import LibMultiLabelLinear, NapkinXCPLT, OmikujiTrees

__all__ = [
    "EMPTY_LABEL_SCORE",
    "FrequencyPrior",
    "LINEAR_FORMAT",
    "LibMultiLabelLinear",
    "MentionMatcher",
    "NapkinXCPLT",
    "OmikujiTrees",
    "OneVsRestLinear",
    "TFIDF_DEFAULTS",
    "check_label_matrix",
    "fit_one_vs_rest",
    "load_linear",
    "make_tfidf_logistic",
    "make_tfidf_ovr",
    "predict_top_k",
    "save_linear",
    "top_k_dense",
]

#: Names that moved to another subpackage, and their new home: reading one
#: here raises an ImportError naming the new spelling.
_MOVED = {"DescriptionRanker": "xplant.unseen", "DescriptionFusion": "xplant.unseen",
          "FUSION_WEIGHTS": "xplant.unseen"}


def __getattr__(name):
    if name in _MOVED:
        new = _MOVED[name]
        raise ImportError(f"xplant.linear.{name} moved to {new}.{name}: write "
                          f"'from {new} import {name}' (saved models load as before)")
    raise AttributeError(f"module 'xplant.linear' has no attribute {name!r}")
