"""nn.Module building blocks: label-wise attention and the PLANT networks."""

from ._attention import LabelAttention
from ._plant import PlanterNet, PlantNet

__all__ = ["LabelAttention", "PlanterNet", "PlantNet"]
