"""PlantClassifier's fitted parts, and the fitted attributes that read them.

What ``fit`` chooses or fits after (or beside) the network is kept as a
few small objects in ``parts_``, each with ``to_dict``/``from_dict`` (and
``apply``), which :func:`~xplant.neural.save_model` and
:func:`~xplant.neural.load_model` walk:

- ``"label_space"``: the :class:`xplant._label_space.LabelSpace` every estimator keeps
  (``classes_``, ``label_frequency_``, ``scored_labels_``, ...);
- ``"relevance"``: the fitted :class:`~xplant.relevance.MIGRelevance` (``relevance_``),
  saved in its folder ``relevance/``;
- ``"dev_choices"``: the :class:`~xplant.neural.parts._dev_choices.DevChoices` (the
  best epoch and every choice's record: ``best_epoch_``, ``dev_choices_``);
- ``"stage1_weight"``: the :class:`~xplant.neural.parts._dev_choices.Stage1WeightRace`
  (``stage1_weight_``, ``stage1_weight_candidates_``);
- ``"planting"``: the fitted AttentionPlanter of Stage 1 (``planter_``), kept after a fit
  and not saved (a saved PlantClassifier holds the trained network);
- ``"decision_rule"``: the :class:`xplant.metrics.DecisionRule` of ``predict``;
- ``"logit_adjustment"``: the :class:`~xplant.neural.parts._logit_adjustment.LogitAdjustment` (τ);
- ``"shortlist_fusion"``: the :class:`~xplant.neural.parts._shortlist_fusion.ShortlistFusion`
  (the fitted shortlist, C, the calibration and α), None without a shortlist.

The documented fitted attributes (``decision_``, ``k_``, ``threshold_``,
``label_thresholds_``, ``logit_adjustment_``, ``logit_adjustment_dev_``,
``shortlist_``, ``n_candidates_``, ``shortlist_calibration_``,
``fusion_weight_``, ``shortlist_info_``) are read-only views of them
(:class:`xplant._fitted_parts.PartField`).
"""

from ..._fitted_parts import PartField
from ._dev_choices import DevChoices, Stage1WeightRace

#: The names of a PlantClassifier's fitted parts, in the order they are saved.
PART_NAMES = ("label_space", "relevance", "dev_choices", "stage1_weight", "decision_rule",
              "logit_adjustment", "shortlist_fusion")
#: The parts a saved PlantClassifier leaves out: the fitted planter (the network holds what
#: Stage 1 planted).
UNSAVED_PARTS = ("planting",)


class FittedPartsMixin:
    """The fitted attributes of :class:`PlantClassifier` as read-only views of ``parts_``."""

    decision_rule_ = PartField("decision_rule")
    decision_ = PartField("decision_rule", "rule")
    k_ = PartField("decision_rule", "k")
    threshold_ = PartField("decision_rule", "threshold")
    label_thresholds_ = PartField("decision_rule", "thresholds")
    logit_adjustment_ = PartField("logit_adjustment", "tau")
    logit_adjustment_dev_ = PartField("logit_adjustment", "dev_scores")
    shortlist_ = PartField("shortlist_fusion", "shortlist", optional=True)
    n_candidates_ = PartField("shortlist_fusion", "n_candidates", optional=True)
    fusion_weight_ = PartField("shortlist_fusion", "weight", optional=True)
    shortlist_info_ = PartField("shortlist_fusion", "info", optional=True)
    shortlist_calibration_ = PartField("shortlist_fusion", "calibration")
    best_epoch_ = PartField("dev_choices", "best_epoch", factory=DevChoices)
    dev_choices_ = PartField("dev_choices", "records", factory=DevChoices)
    stage1_weight_ = PartField("stage1_weight", "weight", factory=Stage1WeightRace)
    stage1_weight_candidates_ = PartField("stage1_weight", "candidates", factory=Stage1WeightRace)
    # the fitted planter of Stage 1, kept after fit (None: not planted, or loaded)
    planter_ = PartField("planting", settable=True, optional=True)
