"""Labels never seen in training: ranking them by their descriptions.

A model trained on ``Y`` cannot rank a label without a training positive.
These estimators read each label's description, synonyms and ancestors
(:mod:`xplant.datasets` loaders give them) instead:

- :class:`DescriptionRanker`: the TF-IDF cosine of a document with each
  label's text (optionally plus a sentence encoder's, :func:`encode_texts`);
  a zero-shot baseline of its own, and a shortlist.
- :class:`DescriptionFusion`: a trained model for the labels it has seen,
  the descriptions for the rest, and optionally a mention matcher learned
  from gold evidence (``mentions``, chosen on dev last) (a member of :func:`xplant.fusion.fuse`);
  its weights are chosen on dev from :data:`FUSION_WEIGHTS` (unseen labels)
  and :data:`SEEN_WEIGHTS` (the description score added to the seen labels);
  with a catalogue (``fit(..., catalogue=...)``) it ranks an open label
  space, every code of the catalogue, and :class:`CatalogueIndex` scores
  the codes without a training positive by their text, their seen
  relatives and the prior of their form (:func:`label_form_prior`;
  ``add_labels`` for a new release, ``suggest_unseen`` for the unseen-code
  channel; :func:`labels_added` counts a release's codes). The catalogue's names are encoded once and cached
  (:func:`cached_embeddings`); documents' sentences are encoded in one
  place (:func:`sentence_embeddings`).

A fitted DescriptionRanker is saved with :func:`xplant.linear.save_linear`,
a fitted DescriptionFusion (with its model) with
:func:`save_description_fusion`; both load with :func:`xplant.persistence.load_saved`.
See :doc:`/guide/unseen`.
"""

from ._description_fusion import (FALLBACK_SEEN_WEIGHT, FALLBACK_WEIGHT, FUSION_WEIGHTS,
                                  PRIOR_WEIGHTS, SEEN_WEIGHTS, DescriptionFusion)
from ._catalogue import CatalogueIndex
from ._catalogue_fusion import labels_added
from ._label_forms import label_form_prior
from ._description_ranker import DescriptionRanker
from ._encoder import cached_embeddings, encode_texts, encoder_precision, sentence_embeddings
# importing _io also registers DescriptionRanker with save_linear and load_linear
from ._io import save_description_fusion

__all__ = ["CatalogueIndex", "DescriptionFusion", "DescriptionRanker", "FALLBACK_SEEN_WEIGHT", "FALLBACK_WEIGHT",
           "FUSION_WEIGHTS", "PRIOR_WEIGHTS", "SEEN_WEIGHTS", "cached_embeddings", "encode_texts",
           "encoder_precision", "label_form_prior", "labels_added", "save_description_fusion", "sentence_embeddings"]
