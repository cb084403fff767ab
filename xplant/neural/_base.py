"""The skorch ladder shared by AttentionPlanter and PlantClassifier."""

import numbers

import torch
from skorch import NeuralNet
from torch.utils.data import DataLoader

from ._common import check_param, to_python
from ._data import LengthBucketSampler
from .backbones import backbone_kind, build_backbone


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
        self.optimizer_ = self.optimizer(params, lr=float(self.lr), **to_python(kwargs))
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

    def check_shared_params(self, int_params=()):
        """Validate the parameters both estimators have; raise ValueError naming the fix."""
        backbone_kind(self.backbone)
        check_param("strategy", self.strategy, allowed=("skorch", "deepspeed"))
        for name in ("embedding_dim", "hidden_dim", "attention_dim", "kernel_size", "max_epochs",
                     "batch_size") + tuple(int_params):
            check_param(name, getattr(self, name), kind=numbers.Integral, low=1)
        check_param("lr", self.lr, low=0, low_open=True)
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
