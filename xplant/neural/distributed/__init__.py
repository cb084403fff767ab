"""Distributed training of the PLANT estimators on DeepSpeed.

``PlantClassifier(strategy=DeepSpeedStrategy(config=...))`` and
``AttentionPlanter(strategy="deepspeed")`` train through
:func:`fit_deepspeed`: skorch's own loop, with DeepSpeed's step, batches and
checkpoints; ``xplant train --config cfg.yaml`` (``python -m xplant train``,
a job of :mod:`xplant.app`) launches a whole job under ``deepspeed`` or
``torchrun``. DeepSpeed itself is imported only when training starts; it
comes with ``pip install 'xplant[deepspeed]'``.
"""

from ._config import (DeepSpeedStrategy, default_deepspeed_config, read_config_file,
                      resolve_deepspeed_config)
from ._sampler import DistributedBucketSampler
from ._share import broadcast_from_rank0
from ._group import import_deepspeed, init_distributed, rank_and_world, shutdown_distributed
from ._trainer import fit_deepspeed

__all__ = ["DeepSpeedStrategy", "DistributedBucketSampler", "broadcast_from_rank0", "default_deepspeed_config",
           "fit_deepspeed", "import_deepspeed", "init_distributed", "rank_and_world",
           "read_config_file", "resolve_deepspeed_config", "shutdown_distributed"]
