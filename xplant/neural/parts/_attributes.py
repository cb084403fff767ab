"""PlantClassifier's fitted parts, and the fitted attributes that read them.

What ``fit`` chooses or fits after (or beside) the network is kept as a
few small objects in ``parts_``, each with ``to_dict``/``from_dict`` (and
``apply``), which :func:`~xplant.neural.save_model` and
:func:`~xplant.neural.load_model` walk:

- ``"decision_rule"``: the :class:`xplant.metrics.DecisionRule` of ``predict``;
- ``"logit_adjustment"``: the :class:`~xplant.neural.parts._logit_adjustment.LogitAdjustment` (τ);
- ``"shortlist_fusion"``: the :class:`~xplant.neural.parts._shortlist_fusion.ShortlistFusion`
  (the fitted shortlist, C, the calibration and α), None without a shortlist.

The documented fitted attributes (``decision_``, ``k_``, ``threshold_``,
``label_thresholds_``, ``logit_adjustment_``, ``logit_adjustment_dev_``,
``shortlist_``, ``n_candidates_``, ``shortlist_calibration_``,
``fusion_weight_``, ``shortlist_info_``) are read-only properties over them.
"""

#: The names of a PlantClassifier's fitted parts, in the order they are saved.
PART_NAMES = ("decision_rule", "logit_adjustment", "shortlist_fusion")


def _view(part, field=None, required=True):
    """A read-only property: ``parts_[part]`` or its ``field``.

    ``required``: AttributeError when the part is None (else the property is
    None). The property has no docstring of its own: the class docstring's
    Attributes section describes it, as for any fitted attribute.
    """
    def get(self):
        value = self._part(part, required)
        return value if field is None or value is None else getattr(value, field)
    return property(get)


class FittedPartsMixin:
    """The fitted attributes of :class:`PlantClassifier` as read-only views of ``parts_``."""

    def _part(self, name, required=True):
        """``parts_[name]``; AttributeError before ``fit`` (or, if ``required``, when None)."""
        parts = self.__dict__.get("parts_")
        part = None if parts is None else parts.get(name)
        if parts is None or (required and part is None):
            raise AttributeError(f"{name} is a part fitted by fit (parts_[{name!r}])")
        return part

    decision_rule_ = _view("decision_rule")
    decision_ = _view("decision_rule", "rule")
    k_ = _view("decision_rule", "k")
    threshold_ = _view("decision_rule", "threshold")
    label_thresholds_ = _view("decision_rule", "thresholds")
    logit_adjustment_ = _view("logit_adjustment", "tau")
    logit_adjustment_dev_ = _view("logit_adjustment", "dev_scores")
    shortlist_ = _view("shortlist_fusion", "shortlist", required=False)
    n_candidates_ = _view("shortlist_fusion", "n_candidates", required=False)
    fusion_weight_ = _view("shortlist_fusion", "weight", required=False)
    shortlist_info_ = _view("shortlist_fusion", "info", required=False)
    shortlist_calibration_ = _view("shortlist_fusion", "calibration")
