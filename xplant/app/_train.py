"""``xplant train --config cfg.yaml``: one training job on 1..N processes.

A job of the command line, as ``xplant run`` and ``xplant fit`` are; it
trains through :class:`~xplant.neural.distributed.DeepSpeedStrategy`. Run
it under any launcher that sets the usual environment (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, LOCAL_RANK), as the module ``xplant``::

    deepspeed --num_gpus 8 -m xplant train --config cfg.yaml
    deepspeed --hostfile hosts -m xplant train --config cfg.yaml
    torchrun --nproc_per_node 8 -m xplant train --config cfg.yaml

or as one plain process. The config (YAML or JSON)::

    dataset:                  # xplant.datasets.load_<loader>(split=..., **rest)
      loader: codiesp
      codes: D
      train_split: train      # default "train"
      dev_split: dev          # default "dev"; null for none (then validation_fraction)
    estimator:
      class: PlantClassifier  # or AttentionPlanter
      params: {backbone: cnn, max_epochs: 10, batch_size: 32}
    relevance:                # MIGRelevance parameters, or a saved one
      params: {top_k: 50}
      path: null              # a saved one: <earlier run>/model/relevance
    deepspeed: {zero_optimization: {stage: 2}}   # or the path of a JSON/YAML file
    output_dir: runs/codiesp-d
    checkpoint_dir: null      # default <output_dir>/checkpoints
    resume: false

MIG is computed once, on rank 0, and broadcast to every rank. Rank 0
alone writes the outputs: ``model/`` (xplant's normal safetensors + JSON
format, with the MIGRelevance in ``model/relevance/``), ``history.json``
and ``run.json``.
"""

import argparse
import json
import time
from pathlib import Path

KNOWN_KEYS = {"dataset", "estimator", "relevance", "deepspeed", "output_dir", "checkpoint_dir",
              "resume"}


def _parser():
    ap = argparse.ArgumentParser(prog="xplant train",
                                 description="Train a PLANT estimator with DeepSpeed "
                                             "(1 process, or many under deepspeed/torchrun).")
    ap.add_argument("--config", required=True, help="YAML or JSON training config")
    ap.add_argument("--output-dir", default=None, help="overrides output_dir of the config")
    ap.add_argument("--resume", action="store_true",
                    help="continue from the latest DeepSpeed checkpoint")
    # the deepspeed launcher appends --local_rank=N; LOCAL_RANK is read from the environment
    ap.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)
    return ap


def check_config(cfg):
    """Validate a training config; return it with defaults filled.

    Raises
    ------
    ValueError
        Unknown top-level keys, or a missing dataset loader or output_dir.

    Examples
    --------
    >>> cfg = check_config({"dataset": {"loader": "codiesp", "codes": "D"}, "output_dir": "out"})
    >>> cfg["estimator"]["class"], cfg["dataset"]["train_split"], cfg["checkpoint_dir"]
    ('PlantClassifier', 'train', 'out/checkpoints')
    """
    unknown = set(cfg) - KNOWN_KEYS
    if unknown:
        raise ValueError(f"unknown config keys {sorted(unknown)}; allowed: {sorted(KNOWN_KEYS)}")
    ds = dict(cfg.get("dataset") or {})
    if "loader" not in ds:
        raise ValueError("the config needs dataset.loader, e.g. dataset: {loader: codiesp, codes: D}")
    ds.setdefault("train_split", "train")
    ds.setdefault("dev_split", "dev")
    est = dict(cfg.get("estimator") or {})
    est.setdefault("class", "PlantClassifier")
    est.setdefault("params", {})
    if est["class"] not in ("PlantClassifier", "AttentionPlanter"):
        raise ValueError(f"estimator.class must be PlantClassifier or AttentionPlanter, "
                         f"got {est['class']!r}")
    rel = dict(cfg.get("relevance") or {})
    rel.setdefault("params", {})
    rel.setdefault("path", None)
    if not cfg.get("output_dir"):
        raise ValueError("the config needs output_dir (where rank 0 writes the model)")
    out = dict(cfg, dataset=ds, estimator=est, relevance=rel)
    out.setdefault("deepspeed", None)
    if not out.get("checkpoint_dir"):
        out["checkpoint_dir"] = str(Path(out["output_dir"]) / "checkpoints")
    out["resume"] = bool(out.get("resume", False))
    return out


def _load_split(ds, split):
    from .. import datasets
    name = "load_" + ds["loader"]
    loader = getattr(datasets, name, None)
    if loader is None:
        raise ValueError(f"unknown dataset loader {ds['loader']!r}; xplant.datasets has no {name}")
    kwargs = {k: v for k, v in ds.items() if k not in ("loader", "train_split", "dev_split")}
    return loader(split=split, **kwargs)


def main(argv=None):
    """Entry point of ``xplant train``; returns the process exit status."""
    args = _parser().parse_args(argv)
    from ..neural.distributed import read_config_file, resolve_deepspeed_config
    cfg = read_config_file(args.config)
    if args.output_dir:
        cfg["output_dir"] = args.output_dir
        cfg.pop("checkpoint_dir", None)
    cfg = check_config(cfg)
    if args.resume:
        cfg["resume"] = True

    from ..neural import AttentionPlanter, PlantClassifier, default_relevance, translate_params
    from ..neural.distributed import (DeepSpeedStrategy, broadcast_from_rank0, init_distributed,
                                      rank_and_world, shutdown_distributed)
    init_distributed()
    rank, world = rank_and_world()
    if rank == 0:
        import logging
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    t0 = time.time()

    train = _load_split(cfg["dataset"], cfg["dataset"]["train_split"])
    dev = None
    if cfg["dataset"]["dev_split"]:
        dev = _load_split(cfg["dataset"], cfg["dataset"]["dev_split"])
    est_cfg = cfg["estimator"]
    params = dict(est_cfg["params"])
    backbone = params.get("backbone", "cnn")

    def fit_relevance():
        rel = default_relevance(backbone).set_params(**cfg["relevance"]["params"])
        return rel.fit(train.texts, train.Y)

    rel_path = cfg["relevance"]["path"]
    relevance = broadcast_from_rank0(None if rel_path else fit_relevance, path=rel_path or None)
    corpus = relevance.transform(train.texts)

    ds_cfg = resolve_deepspeed_config(cfg["deepspeed"]) if cfg["deepspeed"] is not None else {}
    ds_cfg = dict(ds_cfg, checkpoint_dir=cfg["checkpoint_dir"], resume=cfg["resume"])
    cls = {"PlantClassifier": PlantClassifier, "AttentionPlanter": AttentionPlanter}[est_cfg["class"]]
    params = translate_params(cls, params)      # a config may use the names of earlier releases
    nested = {k: params.pop(k) for k in list(params) if k.startswith("planter__")}
    params.update(strategy=DeepSpeedStrategy(config=ds_cfg))
    if rank != 0:
        params["verbose"] = 0
    estimator = cls(**params).set_params(**nested)
    val = None if dev is None else (dev.texts, dev.Y)
    estimator.fit(corpus, train.Y, validation_data=val)

    if rank == 0:
        out = Path(cfg["output_dir"])
        out.mkdir(parents=True, exist_ok=True)
        from ._rows import save_row          # the run's one saver: safetensors + JSON
        save_row(estimator, estimator, out / "model")
        from .._files import write_text
        write_text(out / "history.json", json.dumps(list(estimator.history), default=float))
        run = {"config": cfg, "world_size": world, "seconds": time.time() - t0,
               "n_train_documents": len(train.texts),
               "n_dev_documents": 0 if dev is None else len(dev.texts)}
        write_text(out / "run.json", json.dumps(run, indent=2, default=str))
    shutdown_distributed()             # no gloo thread left to the interpreter's exit
    return 0
