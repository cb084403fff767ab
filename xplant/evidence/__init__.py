"""Evidence: the text spans a label's attention points at, and how well they match gold evidence.

Lightweight (numpy and scipy only; never imports torch):

- :func:`merge_spans` turns per-token weights into ranked character spans;
- :func:`mig_highlighter` is the MIG-only baseline highlighter;
- :func:`score_evidence` scores spans against CodiEsp-X gold evidence;
- :func:`check_evidence` checks gold evidence (per document and label, its
  spans) and returns it in the one form every reader of evidence takes;
- :func:`attention_cosine_similarity` and :func:`related_rare_label_groups`
  compute PLANT's attention-similarity diagnostic.
"""

from ._gold import EVIDENCE_EXAMPLE, check_evidence
from ._scoring import score_evidence
from ._similarity import attention_cosine_similarity, related_rare_label_groups
from ._spans import merge_spans, mig_highlighter

__all__ = [
    "EVIDENCE_EXAMPLE",
    "check_evidence",
    "attention_cosine_similarity",
    "merge_spans",
    "mig_highlighter",
    "related_rare_label_groups",
    "score_evidence",
]
