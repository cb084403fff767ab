"""Stage 2 of PLANT: PlantClassifier, trained from the planted attention.

Private modules; the public names are re-exported by :mod:`xplant.neural`.

An estimator and collaborator objects, each in its own file, as
scikit-learn's ``_hist_gradient_boosting`` lays out its estimator and its
grower and predictor (no mixins):

- ``_classifier.py``: :class:`~xplant.neural.PlantClassifier`, its public
  methods and its fitted attributes (views of the fitted parts);
- ``_network.py``: :class:`NetworkScorer`, the trained network as a scorer of
  encoded documents (logits, top-k, attention);
- ``_planted_start.py``: running the planter (Stage 1) and starting Stage 2 from it;
- ``_items.py``: Stage 2's items (documents, candidates, ranking items) and their batches;
- ``_defaults.py``: the labels Stage 2 scores, its learning rate and unfreezing phases;
- ``_stage1_weight.py``: ``stage1_weight="dev"``, Stage 2 once per candidate weight;
- ``_shortlist.py``: :class:`ShortlistTraining` (the shortlist's share of ``fit``)
  and :class:`FusedScorer` (the fused scores of a fitted model);
- ``_final_choices.py``: the end of ``fit``'s choices (the epoch, the decision rule), as plain functions;
- ``_io.py``: ``save_model`` and ``load_model``.

The top stage of :mod:`xplant.neural`: it may import every other one
(``tests/test_layers.py``).
"""
