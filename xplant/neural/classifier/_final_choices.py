"""What PlantClassifier's fit does after training: its last choices, and letting dev go.

A mixin of :class:`~xplant.neural.PlantClassifier`: ``_epoch_choice``
picks the best epoch by the dev ``scoring``, ``_choose_decision`` the
decision rule and its parameters (a :class:`xplant.metrics.DecisionRule`,
the fitted part ``parts_["decision_rule"]``); ``_release_dev_split`` drops
what only training needed, and
``_warn_fallbacks`` warns once for every choice of a fit that took its
fallback for want of labelled dev data.
"""

import numpy as np

from ...metrics import DECISION_RULES, DecisionRule


class AfterTrainingMixin:
    """The end of :class:`PlantClassifier`'s fit: the epoch, the decision rule, the dev split let go."""

    def _warn_fallbacks(self):
        """One :class:`~xplant.model_selection.NoDevDataWarning` for every choice of
        this fit that took its fallback (no labelled dev data)."""
        fell = {n: c["value"] for n, c in self.dev_choices_.items()
                if not c["on_dev"] and not c.get("fixed")}
        if fell:
            import warnings
            from ...model_selection import NoDevDataWarning
            warnings.warn(f"{self._no_dev_reason_}: no labelled dev data to choose on, so "
                          "these choices took their fallbacks: " + ", ".join(f"{n}={v!r}" for n, v in fell.items()) +
                          ". Pass validation_data with labelled documents (or a "
                          "validation_fraction), or set the values yourself",
                          NoDevDataWarning, stacklevel=3)

    def _ready_after_loading(self):
        """The training-time state of a model just loaded (its fitted parts restored): a
        fresh generator, the unfreezing phases, no dev split."""
        self.rng_ = np.random.default_rng(self.random_state)
        self.phases_ = self._phases() if self._phases() is not None else []
        self.dev_view_ = None
        self._release_dev_split()

    def _release_dev_split(self):
        """Drop what only training needed: the dev documents, targets and shortlist view
        (an (n_dev, L) order with a shortlist), here and in the fitted planter."""
        self.dev_docs_ = self.dev_Y_ = self.dev_dataset_ = None
        if hasattr(self, "dev_view_"):
            self.dev_view_ = None
        if getattr(self, "planter_", None) is not None:
            self.planter_.dev_dataset_ = self.planter_.dev_full_ = None

    def _best_epoch(self):
        """The chosen epoch (:meth:`_epoch_choice`)."""
        return int(self._epoch_choice().value)

    def _epoch_choice(self):
        """The best epoch by the dev ``scoring`` (a ranking choice; ties keep the earlier,
        as early stopping restores it), or the last epoch without dev data; with
        ``patience=None`` the last epoch, recorded as fixed."""
        from ...model_selection import choose_on_dev
        if self.patience is None:
            return choose_on_dev("epoch", [len(self.history)], None, family="ranking",
                                 criterion=self.scoring, fallback=len(self.history), fixed=True)
        key = "valid_" + self.scoring
        vals = [h.get(key) for h in self.history]
        has_dev = bool(vals) and vals[0] is not None
        vals = [float("-inf") if v is None or not np.isfinite(v) else float(v) for v in vals]
        return choose_on_dev("epoch", list(range(1, len(vals) + 1)) or [0], vals or [0.0],
                             family="ranking", criterion=self.scoring,
                             fallback=len(self.history), has_dev=has_dev, warn=False)

    def _choose_decision(self, Y_train, dev_scores=None):
        """The decision rule and its parameters, by :func:`xplant.metrics.choose_rule`:
        with ``decision="dev"`` the rule is a
        :func:`~xplant.model_selection.choose_on_dev` decision choice
        (cross-fitted dev micro-F1), else the fixed one; k and the global
        threshold are fitted on dev either way. Without labelled dev data:
        the rule ``decision`` names (top-k for "dev"), k the mean training
        labels per document, the threshold 0.5 (each label's too), with the
        fit's one ``NoDevDataWarning``. A fixed rule with ``decision__k`` and
        ``decision__threshold`` (and ``decision__thresholds`` for the
        per-label rule) is taken as given: nothing is fitted on dev."""
        from .._settings import decision_settings
        has_dev = self.dev_docs_ is not None and self.dev_Y_.nnz > 0
        rules = DECISION_RULES if self.decision == "dev" else (self.decision,)
        mean = int(max(1, round(Y_train.nnz / max(1, Y_train.shape[0]))))
        fallback = {"rule": rules[0], "k": min(mean, self.n_labels_), "threshold": 0.5,
                    "thresholds": np.full(self.n_labels_, 0.5)}
        settings = decision_settings(self)
        fixed = None
        if self.decision != "dev" and settings["k"] is not None \
                and settings["threshold"] is not None:
            fixed = {"rule": self.decision, "k": settings["k"],
                     "threshold": settings["threshold"], "thresholds": settings["thresholds"]}
        scores = None
        if has_dev and fixed is None:
            scores = dev_scores if dev_scores is not None else self._scores(self.dev_docs_)
        rule = DecisionRule.choose(self.dev_Y_ if has_dev else None, scores,
                                   int(settings["max_k"]), rules=rules, fallback=fallback,
                                   warn=False, fixed=fixed)
        self.parts_["decision_rule"] = rule
        self.dev_choices_.update({n: c.to_dict() for n, c in rule.choices.items()})
