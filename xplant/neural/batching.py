"""Batching of the neural estimators, public for scripts that time or probe them.

The same objects ``PlantClassifier`` and ``AttentionPlanter`` train with
(they live in the private modules ``training/_data.py`` and
``classifier/_items.py``): documents as token-id arrays
and labels as per-document positive ids, never a dense (n, L) target;
batches of similar length, padded to the batch's longest document.

- :class:`TokenDataset`: documents and their positive labels;
- :class:`LengthBucketSampler`: batches of documents of similar length;
- :class:`Stage2Collate`: a batch of items as model inputs and targets;
- :func:`pad_batch`, :func:`positives_list`.
"""

from .classifier._items import Stage2Collate
from .training._data import LengthBucketSampler, TokenDataset, pad_batch, positives_list

__all__ = ["LengthBucketSampler", "Stage2Collate", "TokenDataset", "pad_batch", "positives_list"]
