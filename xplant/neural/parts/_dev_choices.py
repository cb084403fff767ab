"""The choices a PlantClassifier's fit made on dev, and the race of Stage 1 weights.

Two fitted parts:

- :class:`DevChoices` (``parts_["dev_choices"]``): the best epoch and the
  record of every choice made on dev (``best_epoch_``, ``dev_choices_``);
- :class:`Stage1WeightRace` (``parts_["stage1_weight"]``): the Stage 1 loss
  weight Stage 2 trained with and, with ``stage1_weight="dev"``, the
  candidates it raced (``stage1_weight_``, ``stage1_weight_candidates_``).

Each turns into JSON and back (``to_dict``/``from_dict``); a saved model keeps
their fields in ``config.json`` under the names of earlier releases.
"""


class DevChoices:
    """The epoch kept and the records of every choice a fit made on dev.

    Parameters
    ----------
    best_epoch : int or None
        The epoch whose weights the model keeps (1-based; 0 for a model
        saved before it was recorded).
    records : dict or None
        ``{name: choice record}`` (:meth:`xplant.model_selection.DevChoice.to_dict`).

    Examples
    --------
    >>> DevChoices.from_dict(DevChoices(7, {}).to_dict()).best_epoch
    7
    """

    def __init__(self, best_epoch=None, records=None):
        self.best_epoch = best_epoch
        self.records = records

    def to_dict(self):
        """``{"best_epoch": int, "dev_choices": dict}``."""
        return {"best_epoch": int(self.best_epoch or 0), "dev_choices": dict(self.records or {})}

    @classmethod
    def from_dict(cls, state):
        """The part of :meth:`to_dict`'s state."""
        return cls(int(state["best_epoch"]), dict(state["dev_choices"]))

    def __eq__(self, other):
        if not isinstance(other, DevChoices):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None


class Stage1WeightRace:
    """The Stage 1 loss weight Stage 2 trained with, and the candidates raced on dev.

    Parameters
    ----------
    weight : float or None
        The weight of the Stage 1 ranking loss in Stage 2's loss.
    candidates : list of dict or None
        With ``stage1_weight="dev"``: each candidate's record (its weight,
        dev score, epochs and seconds); None when the weight was given.

    Examples
    --------
    >>> Stage1WeightRace.from_dict(Stage1WeightRace(0.1, None).to_dict()).weight
    0.1
    """

    def __init__(self, weight=None, candidates=None):
        self.weight = weight
        self.candidates = candidates

    def to_dict(self):
        """``{"stage1_weight": float, "stage1_weight_candidates": list or None}``."""
        return {"stage1_weight": float(self.weight or 0.0),
                "stage1_weight_candidates": self.candidates}

    @classmethod
    def from_dict(cls, state):
        """The part of :meth:`to_dict`'s state."""
        return cls(float(state["stage1_weight"]), state.get("stage1_weight_candidates"))

    def __eq__(self, other):
        if not isinstance(other, Stage1WeightRace):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None
