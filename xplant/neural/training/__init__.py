"""The machinery of a fit, shared by Stage 1 (planting) and Stage 2 (the classifier).

Private modules; :mod:`xplant.neural.batching` makes the data path public.

- ``_data.py``: token datasets, padding and length-bucketed batches;
- ``_callbacks.py``: skorch callbacks (warmup and cosine decay, progressive
  unfreezing, dev scoring, the non-finite loss guard, attention nDCG);
- ``_checkpoint.py``: atomic, pickle-free, resumable training checkpoints;
- ``_torch_state.py``: torch's threads, seeds, deterministic CPU kernels and
  subnormal sweeps during a fit.

Below both stages: training imports neither planting nor the classifier
(``tests/test_layers.py``).
"""
