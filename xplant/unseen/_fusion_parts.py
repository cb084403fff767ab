"""A DescriptionFusion's fitted parts: its sources, its weights, its open space, its dev records.

Each part owns a few fields of the fitted fusion (``parts_``, beside the label
space every estimator keeps); the fusion's documented fitted attributes are
views of them (:class:`xplant._fitted_parts.PartField`), which ``fit`` sets and
the loader restores as whole parts (:func:`xplant.unseen._io.load_description_fusion`).

- :class:`FusionSources` (``"sources"``): the fitted model, the description
  ranker and the mention matcher (``estimator_``, ``ranker_``, ``mentions_``);
- :class:`FusionWeights` (``"weights"``): the fusion's weights and its
  default top-k (``weight_``, ``seen_weight_``, ``mention_weight_``,
  ``near_weight_``, ``family_weight_``, ``prior_weight_``, ``k_``);
- :class:`OpenSpace` (``"open_space"``): the labels the descriptions score and,
  with a catalogue, its index (``unseen_``, ``catalogue_``, ``known_classes_``,
  ``open_classes_``, ``catalogue_record_``);
- :class:`FusionChoices` (``"dev_choices"``): the records of the weights chosen on
  dev (``dev_map_``, ``dev_choice_``, ``mention_choice_``).
"""


from .._fitted_parts import FittedFields

#: The parts a saved DescriptionFusion stores in its own layout (``config.json``, its
#: arrays, ``estimator/``).
FUSION_PARTS = ("sources", "weights", "open_space", "dev_choices")


class FusionSources(FittedFields):
    """The fitted sources of a fusion: ``model``, ``ranker`` and ``mentions`` (or None)."""

    FIELDS = ("model", "ranker", "mentions")


class FusionWeights(FittedFields):
    """The weights a fusion uses and its default top-k.

    Fields: ``weight`` and ``seen_weight`` (the description score's weight on
    unseen and on seen labels), ``mention_weight``, ``near_weight``,
    ``family_weight`` and ``prior_weight`` (the catalogue's; 0 without one),
    ``k`` (the training documents' mean number of labels).

    Examples
    --------
    >>> FusionWeights(weight=1.0, k=3).seen_weight is None
    True
    """

    FIELDS = ("weight", "seen_weight", "mention_weight", "near_weight", "family_weight",
              "prior_weight", "k")


class OpenSpace(FittedFields):
    """The labels the descriptions score: ``unseen`` (their columns), and with a catalogue
    its ``catalogue`` index, the ``known_classes`` of ``Y``, the ``open_classes`` and its
    ``record``."""

    FIELDS = ("unseen", "catalogue", "known_classes", "open_classes", "record")


class FusionChoices(FittedFields):
    """The records of the weights chosen on dev: ``dev_map`` (each candidate's dev MAP),
    ``weights`` (the description weights' choice) and ``mentions`` (the mention
    weight's)."""

    FIELDS = ("dev_map", "weights", "mentions")
