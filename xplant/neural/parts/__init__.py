"""The fitted parts of a PlantClassifier (Stage 2): what ``fit`` keeps beside the network.

Private modules. Each part has ``apply`` and ``to_dict``/``from_dict``;
``parts_`` holds them and the classifier's save and load walk them.

- ``_attributes.py``: the part names and the fitted attributes that read
  them (``decision_``, ``k_``, ``shortlist_``, ...);
- ``_logit_adjustment.py``: post-hoc logit adjustment (the part and its
  plain functions);
- ``_shortlist_fusion.py``: the shortlist, its calibration and the fusion
  weight, saved in the folder ``shortlist/``.

The decision rule part is :class:`xplant.metrics.DecisionRule`. Parts import
no other stage of :mod:`xplant.neural` (``tests/test_layers.py``).
"""
