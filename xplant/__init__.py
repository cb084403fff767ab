"""xplant: extreme multi-label text classification with planted attention.

The public names are imported lazily, so that ``import xplant`` stays cheap
and never imports torch. The neural estimators (``PlantClassifier``,
``AttentionPlanter``) need the ``neural`` extra.
"""

import importlib

__version__ = "0.1.0"

_LAZY = {
    "MIGRelevance": "xplant.relevance",
    "mig_scores": "xplant.relevance",
    "TokenCorpus": "xplant.relevance",
    "AttentionPlanter": "xplant.neural",
    "PlantClassifier": "xplant.neural",
    "predict_top_k": "xplant.linear",
    "MentionMatcher": "xplant.linear",
    "DescriptionRanker": "xplant.unseen",
    "DescriptionFusion": "xplant.unseen",
    "load_saved": "xplant.persistence",
}

_SUBPACKAGES = ("datasets", "fusion", "linear", "metrics", "model_selection", "neural",
                "persistence", "relevance", "unseen")

__all__ = sorted(list(_LAZY) + list(_SUBPACKAGES))


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"xplant.{name}")
    raise AttributeError(f"module 'xplant' has no attribute {name!r}")


def __dir__():
    return __all__
