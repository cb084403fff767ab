"""Token-label relevance: exact mutual information gain (MIG) for PLANT.

``mig_scores`` is the plain function; ``MIGRelevance`` is the scikit-learn
transformer that owns tokenization and hands a ``TokenCorpus`` downstream.
"""

from ._corpus import TokenCorpus
from ._estimator import MIGRelevance
from ._io import load_relevance, save_relevance
from ._mig import mig_from_counts, mig_scores
from ._tokenize import BUNDLED_ENCODER_SPECS, resolve_hf_path, tokenizer_fingerprint, word_tokens

__all__ = ["BUNDLED_ENCODER_SPECS", "MIGRelevance", "TokenCorpus", "load_relevance",
           "mig_from_counts", "mig_scores", "resolve_hf_path", "word_tokens",
           "save_relevance", "tokenizer_fingerprint"]
