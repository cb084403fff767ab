"""Classical XMTC baselines in scikit-learn style.

- :class:`FrequencyPrior`: rank labels by training frequency.
- :class:`OneVsRestLinear`: one linear model per label, pruned sparse weights.
- :func:`make_tfidf_ovr`, :func:`make_tfidf_logistic`: TF-IDF pipelines.
- :class:`DescriptionRanker`: rank labels by the TF-IDF cosine of a document
  with their descriptions; works for labels never seen in training.
  :class:`DescriptionFusion` scores the labels a trained model never saw
  by their descriptions and keeps the model's scores for the others.
- :func:`predict_top_k`: top-k labels of any fitted model or Pipeline.
- :func:`save_linear`, :func:`load_linear`: save and load any of them
  without pickle (JSON + safetensors; trees in their own format).
- Optional wrappers, each behind an extra: :class:`NapkinXCPLT`,
  :class:`OmikujiTrees` (``xplant[trees]``), :class:`LibMultiLabelLinear`
  (``xplant[libmultilabel]``).
"""

from ._base import check_label_matrix, predict_top_k, top_k_dense
from ._descriptions import FUSION_WEIGHTS, DescriptionFusion, DescriptionRanker
from ._io import LINEAR_FORMAT, load_linear, save_linear
from ._ovr import EMPTY_LABEL_SCORE, OneVsRestLinear, fit_one_vs_rest
from ._pipelines import TFIDF_DEFAULTS, make_tfidf_logistic, make_tfidf_ovr
from ._prior import FrequencyPrior
from ._wrappers import LibMultiLabelLinear, NapkinXCPLT, OmikujiTrees

__all__ = [
    "DescriptionFusion",
    "DescriptionRanker",
    "EMPTY_LABEL_SCORE",
    "FUSION_WEIGHTS",
    "FrequencyPrior",
    "LINEAR_FORMAT",
    "LibMultiLabelLinear",
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
