"""The skorch ladder shared by AttentionPlanter and PlantClassifier."""

import numbers
from typing import NamedTuple

import numpy as np
import torch
from skorch import NeuralNet
from torch.utils.data import DataLoader

from ._common import (_is_lists, check_param, check_targets, deterministic_on_cpu, encode,
                      fit_or_take_corpus, seed_everything, set_torch_threads, split_validation,
                      to_python)
from ._data import LengthBucketSampler, positives_list, truncate
from .backbones import backbone_kind, build_backbone


class FitData(NamedTuple):
    """What the shared start of a neural ``fit`` hands on (:meth:`PlantNetBase._prepare_fit`).

    ``Y`` is the checked (n, L) CSR target of every row of ``X`` and ``docs``
    its token-id lists (truncated to ``max_length``); ``tr`` the training
    rows; ``dv`` the ``validation_fraction`` rows, or None when the dev split
    was given (``validation_data``) or there is none. ``dev_docs``, ``Y_dev``
    and ``dev_pos`` are None without dev data.
    """

    Y: object
    docs: list
    tr: np.ndarray
    dv: object
    train_docs: list
    train_pos: list
    dev_docs: object
    Y_dev: object
    dev_pos: object


class PlantNetBase(NeuralNet):
    """skorch NeuralNet with xplant's data path: token datasets, length buckets, dev split.

    Subclasses set ``collate`` (a collate class taking the padding id) and
    build their module from :meth:`build_encoder`.
    """

    collate = None
    _nested = ("planter", "relevance")   # estimator-valued parameters that get_params(deep=True) opens

    def set_params(self, **params):
        """Set parameters, routing ``planter__*`` and ``relevance__*`` to those estimators.

        Every key that ``get_params(deep=True)`` lists can be set, as in
        scikit-learn: ``set_params(planter__max_epochs=3)`` calls
        ``self.planter.set_params(max_epochs=3)`` (the estimator held by the
        parameter, cloned later by ``fit``). A plain value given in the same
        call (``planter=AttentionPlanter()``) is set first. skorch's own
        prefixes (``optimizer__``, ``module__``, ``callbacks__``, ...) keep
        skorch's routing.

        Raises
        ------
        ValueError
            For a nested key whose estimator is None (set it first).
        """
        nested, plain = {}, {}
        for key, value in params.items():
            head, sep, sub = key.partition("__")
            if sep and head in self._nested:
                nested.setdefault(head, {})[sub] = value
            else:
                plain[key] = value
        if plain:
            super().set_params(**plain)
        for head, sub in nested.items():
            est = getattr(self, head, None)
            if est is None or not hasattr(est, "set_params"):
                raise ValueError(f"cannot set {', '.join(head + '__' + k for k in sub)}: {head} is "
                                 f"{est!r}; give {head}=<estimator> first (in the same call or "
                                 "before)")
            est.set_params(**sub)
        return self

    # -- the shared start and end of fit -------------------------------------
    def _start_fit(self, resume):
        """Validate the parameters, set torch's threads and seed every generator."""
        self._check_params()
        if resume and (self.checkpoint_dir is None or self.strategy != "skorch"):
            raise ValueError("resume=True needs checkpoint_dir (the folder of the interrupted fit) "
                             "and strategy='skorch'")
        set_torch_threads(self.n_jobs)
        self.rng_ = seed_everything(self.random_state)

    def _prepare_fit(self, X, Y, validation_data, *, resume=False, label_names=None):
        """The start of ``fit`` for both estimators: one check of each input, one split.

        Sets ``classes_``, ``relevance_`` (fitted here, or the one of a token
        corpus), ``n_labels_`` and ``rng_``, and returns the :class:`FitData`.
        The dev targets are checked against the training label space.
        """
        self._start_fit(resume)
        Y, self.classes_ = check_targets(Y, len(X), label_names=label_names)
        docs, self.relevance_ = fit_or_take_corpus(X, Y, self.relevance, self.backbone,
                                                   self.max_length)
        docs = truncate(docs, self.max_length)
        dev_docs = Yd = None
        if validation_data is not None:
            Xd, Yd = validation_data
            dev_docs = truncate(encode(Xd, self.relevance_), self.max_length)
            Yd, _ = check_targets(Yd, len(dev_docs), what="Y_dev", require_positive=False,
                                  label_names=self.classes_ if _is_lists(Yd) else None)
            if Yd.shape[1] != Y.shape[1]:
                raise ValueError(f"Y_dev has {Yd.shape[1]} labels but Y has {Y.shape[1]}; "
                                 "both must use the same label space (columns)")
        return self._split_fit_data(Y, docs, dev_docs, Yd)

    def _split_fit_data(self, Y, docs, dev_docs=None, Y_dev=None):
        """Training and dev rows from checked inputs (``Y`` CSR, ``docs`` token lists).

        The given dev split, else a seeded ``validation_fraction`` split of
        the rows, else no dev data. Sets ``n_labels_``.
        """
        n = Y.shape[0]
        self.n_labels_ = Y.shape[1]
        tr, dv = np.arange(n), None
        if dev_docs is None and self.validation_fraction:
            tr, dv = split_validation(n, self.validation_fraction, self.random_state)
            dev_docs, Y_dev = [docs[i] for i in dv], Y[dv]
        pos = positives_list(Y)
        return FitData(Y, docs, tr, dv, [docs[i] for i in tr], [pos[i] for i in tr], dev_docs,
                       Y_dev, None if Y_dev is None else positives_list(Y_dev))

    def _train(self, make_dataset, ckpt, fit=None):
        """The end of ``fit``: resume a checkpoint, or train with DeepSpeed or skorch.

        ``make_dataset()`` builds the training dataset; ``ckpt`` is the
        restored checkpoint (None for a fresh fit); ``fit(make_dataset)``
        replaces the plain skorch loop of a fresh fit. A CPU fit runs with
        torch's deterministic kernels, so that it repeats exactly
        (:func:`deterministic_on_cpu`).
        """
        with deterministic_on_cpu(self.device):
            self._train_loop(make_dataset, ckpt, fit)

    def _train_loop(self, make_dataset, ckpt, fit):
        if ckpt is not None:
            if not ckpt["state"]["completed"]:
                self.partial_fit(make_dataset(), None,
                                 epochs=max(0, self.max_epochs - len(self.history)))
        elif self.strategy == "deepspeed":
            from .distributed import fit_deepspeed
            fit_deepspeed(self, make_dataset(), self.dev_dataset_, config=self.deepspeed_config)
        elif fit is not None:
            fit(make_dataset)
        else:
            self.partial_fit(make_dataset(), None)

    def build_encoder(self):
        """The backbone for the fitted MIGRelevance (architecture params of self)."""
        return build_backbone(self.backbone, relevance=self.relevance_,
                              embedding_dim=self.embedding_dim, hidden_dim=self.hidden_dim,
                              kernel_size=self.kernel_size, dropout=self.dropout,
                              glove=self.glove, lora=self.backbone_options)

    def make_optimizer(self, params):
        """``self.optimizer`` over ``params`` (tensors or param-group dicts)."""
        kwargs = self.get_params_for("optimizer")
        kwargs.setdefault("weight_decay", self.weight_decay)
        if self.optimizer in (torch.optim.AdamW, torch.optim.Adam):
            kwargs.setdefault("fused", True)   # one kernel per step, much faster on CPU
        self.optimizer_ = self.optimizer(params, lr=self.effective_lr(), **to_python(kwargs))
        return self

    def get_split_datasets(self, X, y=None, **fit_params):
        return X, self.dev_dataset_

    def get_iterator(self, dataset, training=False):
        sampler = LengthBucketSampler(dataset.lengths(), self.batch_size, shuffle=training,
                                      generator=self.rng_,
                                      min_docs=getattr(self, "min_epoch_docs", None),
                                      max_docs=getattr(self, "max_epoch_docs", None))
        return DataLoader(dataset, batch_sampler=sampler,
                          collate_fn=self.collate(self.relevance_.pad_id_))

    def effective_lr(self):
        """The learning rate the optimizer gets (float)."""
        return float(self.lr)

    def check_shared_params(self, int_params=(), *, lr_none_ok=False):
        """Validate the parameters both estimators have; raise ValueError naming the fix."""
        backbone_kind(self.backbone)
        check_param("strategy", self.strategy, allowed=("skorch", "deepspeed"))
        for name in ("embedding_dim", "hidden_dim", "attention_dim", "kernel_size", "max_epochs",
                     "batch_size") + tuple(int_params):
            check_param(name, getattr(self, name), kind=numbers.Integral, low=1)
        check_param("lr", self.lr, low=0, low_open=True, none_ok=lr_none_ok)
        check_param("dropout", self.dropout, low=0, high=1)
        check_param("weight_decay", self.weight_decay, low=0)
        check_param("validation_fraction", self.validation_fraction, low=0, high=0.9,
                    low_open=True, none_ok=True)
        check_param("max_length", self.max_length, kind=numbers.Integral, low=1, none_ok=True)
        check_param("min_epoch_docs", self.min_epoch_docs, kind=numbers.Integral, low=1,
                    none_ok=True)
        check_param("max_epoch_docs", self.max_epoch_docs, kind=numbers.Integral, low=1,
                    none_ok=True)
        for name in ("min_epoch_docs", "max_epoch_docs"):
            if getattr(self, name) is not None and self.strategy != "skorch":
                raise ValueError(f"{name} needs strategy='skorch' (the DeepSpeed loop makes "
                                 f"one pass per epoch); set {name}=None")
        if None not in (self.min_epoch_docs, self.max_epoch_docs) \
                and self.max_epoch_docs < self.min_epoch_docs:
            raise ValueError(f"max_epoch_docs={self.max_epoch_docs} is below min_epoch_docs="
                             f"{self.min_epoch_docs}; make max_epoch_docs >= min_epoch_docs "
                             f"(equal values give every training size the same steps per epoch)")
