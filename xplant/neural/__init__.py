"""The PLANT neural estimators (needs the ``neural`` extra: torch, skorch).

This subpackage imports torch; ``import xplant`` does not import it. Its
public names are listed here and in the public modules ``losses``,
``batching``, ``modules``, ``backbones`` and ``distributed``. The private
code is laid out by stage, lowest first (``tests/test_layers.py`` enforces
the order): ``backbones``, ``modules`` and ``losses`` (the networks and
their losses); ``parts`` (what a fitted PlantClassifier keeps beside its
network) and ``training`` (the machinery of a fit); ``distributed``
(DeepSpeed); ``_inputs`` and ``_settings`` (the inputs and settings both
estimators share) and ``_base`` (their skorch ladder); ``planting``
(Stage 1, AttentionPlanter); ``classifier`` (Stage 2, PlantClassifier).
"""

try:
    import torch  # noqa: F401
    import skorch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("xplant.neural needs torch and skorch: pip install 'xplant[neural]'") from exc

from ._inputs import default_relevance
from ._settings import translate_params
from .classifier._classifier import PlantClassifier, load_model
from .classifier._defaults import default_lr, default_phases, scored_labels
from .classifier._io import save_model
from .parts._logit_adjustment import (LOGIT_ADJUSTMENT_GRID, adjust_logits,
                                      choose_logit_adjustment, log_prior)
from .planting._defaults import default_planting_lr
from .planting._planter import AttentionPlanter, load_planting
from .training._callbacks import DegenerateModelWarning

__all__ = ["AttentionPlanter", "DegenerateModelWarning", "LOGIT_ADJUSTMENT_GRID", "PlantClassifier",
           "adjust_logits", "choose_logit_adjustment", "default_lr", "default_phases",
           "default_planting_lr", "default_relevance", "load_model", "load_planting", "log_prior",
           "save_model", "scored_labels", "translate_params"]
