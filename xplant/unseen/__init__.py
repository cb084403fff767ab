"""Labels never seen in training: ranking them by their descriptions.

A model trained on ``Y`` cannot rank a label without a training positive.
These estimators read each label's description, synonyms and ancestors
(:mod:`xplant.datasets` loaders give them) instead:

- :class:`DescriptionRanker`: the TF-IDF cosine of a document with each
  label's text; a zero-shot baseline of its own, and a shortlist.
- :class:`DescriptionFusion`: a trained model for the labels it has seen,
  the descriptions for the rest (a member of :func:`xplant.fusion.fuse`);
  its weight is chosen on dev from :data:`FUSION_WEIGHTS`.

A fitted DescriptionRanker is saved with :func:`xplant.linear.save_linear`
and loaded with :func:`xplant.load_saved`. See docs/unseen-labels.md.
"""

from ._description_fusion import FALLBACK_WEIGHT, FUSION_WEIGHTS, DescriptionFusion
from ._description_ranker import DescriptionRanker
from . import _io  # noqa: F401  (registers DescriptionRanker with save_linear and load_linear)

__all__ = ["DescriptionFusion", "DescriptionRanker", "FALLBACK_WEIGHT", "FUSION_WEIGHTS"]
