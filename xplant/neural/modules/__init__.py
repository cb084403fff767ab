"""nn.Module building blocks: label-wise attention and the PLANT networks."""

from ._attention import LabelAttention
from ._plant import UNSCORED_LOGIT, PlanterNet, PlantNet

__all__ = ["LabelAttention", "PlanterNet", "PlantNet", "UNSCORED_LOGIT"]
