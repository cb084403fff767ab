"""The fitted parts of a PlantClassifier (Stage 2): what ``fit`` keeps beside the network.

Private modules. Each part has ``to_dict``/``from_dict`` (and ``apply``
where it changes scores); ``parts_`` holds them, the classifier's fitted
attributes (``decision_``, ``k_``, ``shortlist_``, ...) read them, and its
save and load walk them.

- ``_dev_choices.py``: the record of the dev choices and the Stage 1 weight race;
- ``_logit_adjustment.py``: post-hoc logit adjustment (the part and its
  plain functions);
- ``_shortlist_fusion.py``: the shortlist, its calibration and the fusion
  weight, saved in the folder ``shortlist/``.

The decision rule part is :class:`xplant.metrics.DecisionRule`. Parts import
no other stage of :mod:`xplant.neural` (``tests/test_layers.py``).
"""
