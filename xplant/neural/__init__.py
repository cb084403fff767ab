"""The PLANT neural estimators (needs the ``neural`` extra: torch, skorch).

This subpackage imports torch; ``import xplant`` does not import it.
"""

try:
    import torch  # noqa: F401
    import skorch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("xplant.neural needs torch and skorch: pip install 'xplant[neural]'") from exc

from ._adjustment import LOGIT_ADJUSTMENT_GRID, adjust_logits, choose_logit_adjustment, log_prior
from ._callbacks import DegenerateModelWarning
from ._classifier import PlantClassifier
from ._common import default_relevance
from ._settings import translate_params
from ._stage2_defaults import default_lr, default_phases, default_planting_lr, scored_labels
from ._io import load_model, save_model
from ._stage1 import AttentionPlanter, load_planting

__all__ = ["AttentionPlanter", "DegenerateModelWarning", "LOGIT_ADJUSTMENT_GRID", "PlantClassifier",
           "adjust_logits", "choose_logit_adjustment", "default_lr", "default_phases",
           "default_planting_lr", "default_relevance", "load_model", "load_planting", "log_prior",
           "save_model", "scored_labels", "translate_params"]
