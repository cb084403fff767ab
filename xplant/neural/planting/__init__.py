"""Stage 1 of PLANT: planting label-wise attention by learning to rank (AttentionPlanter).

Private modules; the public names are re-exported by :mod:`xplant.neural`.

- ``_planter.py``: :class:`~xplant.neural.AttentionPlanter`, ``load_planting`` and
  ``tf_relevance``;
- ``_targets.py``: Stage 1 targets beyond MIG (label descriptions, the
  hierarchy), merged with MIG's;
- ``_items.py``: Stage 1's ranking items per document, and their batches;
- ``_states.py``: a frozen backbone's hidden states, computed once for the
  epochs (``iterator_train__state_cache``);
- ``_defaults.py``: what ``lr=None`` and the epoch's documents resolve to.

Planting sits below the classifier (Stage 2) and never imports it
(``tests/test_layers.py``).
"""
