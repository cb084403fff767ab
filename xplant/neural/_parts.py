"""PlantClassifier's fitted parts, and the fitted attributes that read them.

What ``fit`` chooses or fits after (or beside) the network is kept as a
few small objects in ``parts_``, each with ``to_dict``/``from_dict`` (and
``apply``), which :func:`~xplant.neural.save_model` and
:func:`~xplant.neural.load_model` walk:

- ``"decision_rule"``: the :class:`xplant.metrics.DecisionRule` of ``predict``;
- ``"logit_adjustment"``: the :class:`~xplant.neural._adjustment.LogitAdjustment` (τ);
- ``"shortlist_fusion"``: the :class:`~xplant.neural._fusion_part.ShortlistFusion`
  (the fitted shortlist, C, the calibration and α), None without a shortlist.

The documented fitted attributes (``decision_``, ``k_``, ``threshold_``,
``label_thresholds_``, ``logit_adjustment_``, ``logit_adjustment_dev_``,
``shortlist_``, ``n_candidates_``, ``shortlist_calibration_``,
``fusion_weight_``, ``shortlist_info_``) are read-only properties over them.
"""

#: The names of a PlantClassifier's fitted parts, in the order they are saved.
PART_NAMES = ("decision_rule", "logit_adjustment", "shortlist_fusion")


class FittedPartsMixin:
    """The fitted attributes of :class:`PlantClassifier` as read-only views of ``parts_``."""

    def _part(self, name, required=True):
        """``parts_[name]``; AttributeError before ``fit`` (or, if ``required``, when None)."""
        parts = self.__dict__.get("parts_")
        part = None if parts is None else parts.get(name)
        if parts is None or (required and part is None):
            raise AttributeError(f"{name} is a part fitted by fit (parts_[{name!r}])")
        return part

    @property
    def decision_rule_(self):
        """The fitted :class:`~xplant.metrics.DecisionRule` (``parts_["decision_rule"]``)."""
        return self._part("decision_rule")

    @property
    def decision_(self):
        """The rule ``predict`` applies (``decision_rule_.rule``)."""
        return self.decision_rule_.rule

    @property
    def k_(self):
        """k of the top-k rule (``decision_rule_.k``)."""
        return self.decision_rule_.k

    @property
    def threshold_(self):
        """The global threshold (``decision_rule_.threshold``)."""
        return self.decision_rule_.threshold

    @property
    def label_thresholds_(self):
        """The per-label thresholds (``decision_rule_.thresholds``), or None."""
        return self.decision_rule_.thresholds

    @property
    def logit_adjustment_(self):
        """τ the model scores with (``parts_["logit_adjustment"].tau``)."""
        return self._part("logit_adjustment").tau

    @property
    def logit_adjustment_dev_(self):
        """Each τ's dev micro-F1, or None (``parts_["logit_adjustment"].dev_scores``)."""
        return self._part("logit_adjustment").dev_scores

    @property
    def shortlist_(self):
        """The fitted shortlist, or None (``parts_["shortlist_fusion"].shortlist``)."""
        part = self._part("shortlist_fusion", required=False)
        return None if part is None else part.shortlist

    @property
    def n_candidates_(self):
        """C, or None without a shortlist (``parts_["shortlist_fusion"].n_candidates``)."""
        part = self._part("shortlist_fusion", required=False)
        return None if part is None else part.n_candidates

    @property
    def fusion_weight_(self):
        """α, or None (``parts_["shortlist_fusion"].weight``)."""
        part = self._part("shortlist_fusion", required=False)
        return None if part is None else part.weight

    @property
    def shortlist_info_(self):
        """What fitting the shortlist recorded, or None (``parts_["shortlist_fusion"].info``)."""
        part = self._part("shortlist_fusion", required=False)
        return None if part is None else part.info

    @property
    def shortlist_calibration_(self):
        """(a, b) of σ(a·s + b), with a shortlist (``parts_["shortlist_fusion"].calibration``)."""
        return self._part("shortlist_fusion").calibration
