"""The skorch ladder shared by AttentionPlanter and PlantClassifier."""

from typing import NamedTuple

import numpy as np
import torch
from skorch import NeuralNet
from sklearn.utils.metaestimators import available_if
from torch.utils.data import DataLoader

from .._fitted_parts import PartField
from .._label_space import LabelSpaceOwner
from .._labels import label_lists, prediction_form
from .._params import check_params, to_python
from ._inputs import (_is_lists, check_targets, encode, evidence_targets, fit_or_take_corpus,
                      is_count_matrix, is_token_corpus, n_documents, split_validation)
from ._settings import (SHARED_CONSTRAINTS, check_renamed, encoder_settings, epoch_settings,
                        merge_channel, module_settings, signature_defaults)
from .backbones import build_backbone
from .training._data import LengthBucketSampler, positives_list, truncate
from .training._torch_state import (SUBNORMAL_SWEEP_STEPS, deterministic_on_cpu, seed_everything,
                                    set_torch_threads, zero_subnormal_state)


class FitData(NamedTuple):
    """What the shared start of a neural ``fit`` hands on (:meth:`PlantNetBase._prepare_fit`).

    ``Y`` is the checked (n, L) CSR target of every row of ``X`` and ``docs``
    its token-id lists (truncated to ``max_length``); ``tr`` the training
    rows; ``dv`` the ``validation_fraction`` rows, or None when the dev split
    was given (``validation_data``) or there is none. ``dev_docs``, ``Y_dev``
    and ``dev_pos`` are None without dev data. ``train_evidence`` holds the
    training rows' gold-evidence targets
    (:func:`~xplant.neural._inputs.evidence_targets`), or is None.
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
    train_evidence: object = None


class PlantNetBase(LabelSpaceOwner, NeuralNet):
    """skorch NeuralNet with xplant's data path: token datasets, length buckets, dev split.

    Subclasses set ``collate`` (a collate class taking the padding id) and
    build their module from :meth:`build_encoder`.
    """

    collate = None
    # the fitted MIGRelevance (fitted by fit, or the one a token corpus carries): a part
    relevance_ = PartField("relevance", settable=True)
    _nested = ("planter", "relevance")   # estimator-valued parameters that get_params(deep=True) opens
    _nested_defaults = {}                 # component classes that a None parameter stands for
    _classes_1d = False                   # a 1-D multi-class y: refused (see check_targets)
    _parameter_constraints = SHARED_CONSTRAINTS   # every setting's valid values (_settings)
    _default_module = _default_criterion = None   # each estimator's module and criterion classes
    _default_verbose = 0

    def __init__(self, *, lr, max_epochs, batch_size, **kwargs):
        """skorch's ``__init__`` with the estimators' defaults: their own module and criterion,
        AdamW, no skorch train split (the dev split is the estimators' own); ``kwargs`` override."""
        kwargs = {"module": self._default_module, "criterion": self._default_criterion,
                  "optimizer": torch.optim.AdamW, "train_split": None,
                  "verbose": self._default_verbose, **kwargs}
        super().__init__(lr=lr, max_epochs=max_epochs, batch_size=batch_size, **kwargs)

    def __sklearn_tags__(self):
        """X: raw texts, a token corpus, or a non-negative document-token count matrix."""
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True       # counts (is_count_matrix)
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True      # a 1-D binary y is one label column
        return tags

    def _get_param_names(self):
        """skorch's parameter names without its private ``_params_to_validate``.

        skorch 1.4 lists every attribute not ending in ``_`` as a parameter,
        its own bookkeeping set included; as a parameter it could be set to a
        number (scikit-learn's ``check_set_params``) and break ``set_params``.
        """
        return [k for k in super()._get_param_names() if k != "_params_to_validate"]

    def _check_deprecated_params(self, **kwargs):
        """skorch's hook on ``__init__`` and ``set_params``: old names raise, naming the new one."""
        check_renamed(self, kwargs)

    # -- resolved settings of the prefixed families ------------------------------
    def _module_settings(self):
        """The ``module__`` settings with their defaults filled in (:mod:`._settings`)."""
        return module_settings(self)

    def resolved_params(self):
        """Every setting of this estimator, the prefixed families' defaults written out.

        ``get_params(deep=False)`` lists what was set; this adds the value
        each unset ``module__``, ``criterion__``, ``optimizer__weight_decay``,
        ``iterator_train__`` (epoch sampling) and, for the classifier,
        ``decision__`` setting takes, so that a record of a fit (``xplant
        run``'s ``results.json``) says what it trained with.

        Returns
        -------
        dict
        """
        out = dict(self.get_params(deep=False))
        out.update({"module__" + k: v for k, v in self._module_settings().items()})
        out.update({"criterion__" + k: v for k, v in self._criterion_defaults().items()})
        out.update({"iterator_train__" + k: v for k, v in epoch_settings(self).items()})
        if self.optimizer is torch.optim.AdamW:        # AdamW's own default
            out.setdefault("optimizer__weight_decay", 0.01)
        out.update(self._more_resolved())
        return out

    def _criterion_defaults(self):
        return {**signature_defaults(self.criterion), **self.get_params_for("criterion")}

    def _more_resolved(self):
        return {}

    @property
    def _max_length(self):
        """Tokens kept per document (``module__max_length``; None keeps all)."""
        return self._module_settings()["max_length"]

    def _uses_deepspeed(self):
        from .distributed._config import uses_deepspeed
        return uses_deepspeed(self.strategy)

    def set_params(self, **params):
        """Set parameters, routing ``planter__*`` and ``relevance__*`` to those estimators.

        Every key that ``get_params(deep=True)`` lists can be set, as in
        scikit-learn: ``set_params(planter__max_epochs=3)`` calls
        ``self.planter.set_params(max_epochs=3)`` (the estimator held by the
        parameter, cloned later by ``fit``). A plain value given in the same
        call (``planter=AttentionPlanter()``) is set first. skorch's own
        prefixes (``optimizer__``, ``module__``, ``callbacks__``, ...) keep
        skorch's routing.

        A ``planter__*`` key while ``planter`` is None sets it on a new
        ``AttentionPlanter()`` (the planter that None stands for), which
        becomes the parameter.

        Raises
        ------
        ValueError
            For a nested key whose estimator is None and has no default
            (``relevance``: set it first).
        TypeError
            For a parameter name of an earlier release, naming its new spelling.
        """
        check_renamed(self, params)
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
            if est is None and head in self._nested_defaults:   # the default component, made explicit
                est = self._nested_defaults[head]()
                super().set_params(**{head: est})
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
        self.__dict__.pop("parts_", None)           # a new fit: new fitted parts
        if resume and (self.checkpoint_dir is None or self._uses_deepspeed()):
            raise ValueError("resume=True needs checkpoint_dir (the folder of the interrupted fit) "
                             "and strategy='skorch'")
        set_torch_threads(self.n_jobs)
        self.rng_ = seed_everything(self.random_state)
        if self._uses_deepspeed():     # the process group first: callbacks depend on the rank
            from .distributed import init_distributed
            init_distributed()

    def _prepare_fit(self, X, Y, validation_data, *, resume=False, label_names=None,
                     evidence=None):
        """The start of ``fit`` for both estimators: one check of each input, one split.

        Sets ``classes_``, ``relevance_`` (fitted here, or the one of a token
        corpus), ``n_labels_``, ``rng_`` and ``evidence_record_``, and returns
        the :class:`FitData`. The dev targets are checked against the
        training label space; ``evidence`` (gold spans into the texts X)
        before anything is fitted.
        """
        self._start_fit(resume)
        Y_given = Y
        Y, self.classes_ = check_targets(Y, n_documents(X), label_names=label_names,
                                         classes_1d=self._classes_1d)
        self.prediction_form_ = prediction_form(Y_given)   # predict answers in this Y's form
        texts, checked = self._check_evidence(X, Y, evidence)
        docs, self.relevance_ = fit_or_take_corpus(X, Y, self.relevance, self.backbone,
                                                   self._max_length)
        if is_count_matrix(X):
            self.n_features_in_ = int(X.shape[1])    # the count matrix's columns
        else:
            self.__dict__.pop("n_features_in_", None)
        docs = truncate(docs, self._max_length)
        dev_docs = Yd = None
        if validation_data is not None:
            Xd, Yd = validation_data
            dev_docs = truncate(encode(Xd, self.relevance_), self._max_length)
            Yd, _ = check_targets(Yd, len(dev_docs), what="Y_dev", require_positive=False,
                                  label_names=self.classes_ if _is_lists(Yd) else None)
            if Yd.shape[1] != Y.shape[1]:
                raise ValueError(f"Y_dev has {Yd.shape[1]} labels but Y has {Y.shape[1]}; "
                                 "both must use the same label space (columns)")
        targets = None if checked is None else evidence_targets(
            self.relevance_, texts, checked, {c: j for j, c in enumerate(self.classes_.tolist())},
            max_length=self._max_length)
        return self._split_fit_data(Y, docs, dev_docs, Yd, targets)

    def _check_evidence(self, X, Y, evidence):
        """The texts X's evidence indexes, and ``evidence`` checked against them and Y's labels.

        The texts are X's, or those a token corpus of
        ``MIGRelevance.transform`` keeps (a Pipeline's). ``(None, None)``
        without evidence.

        Raises
        ------
        ValueError
            Evidence without the raw texts its offsets index (a count
            matrix, or a token corpus without texts), or evidence
            :func:`xplant.evidence.check_evidence` refuses.
        """
        self.evidence_record_ = None
        if evidence is None:
            return None, None
        texts = getattr(X, "texts", None) if is_token_corpus(X) else X
        if is_count_matrix(X) or texts is None or any(not isinstance(t, str) for t in texts):
            raise ValueError("evidence= needs the raw texts its offsets index; X is a count "
                             "matrix or token ids without their texts. Give the texts (a list "
                             "of str), or MIGRelevance.transform's output, which keeps them")
        from ..evidence import check_evidence
        checked, self.evidence_record_ = check_evidence(evidence, list(texts),
                                                        label_lists(Y, self.classes_))
        return list(texts), checked

    def _split_fit_data(self, Y, docs, dev_docs=None, Y_dev=None, evidence=None):
        """Training and dev rows from checked inputs (``Y`` CSR, ``docs`` token lists).

        The given dev split, else a seeded ``validation_fraction`` split of
        the rows, else no dev data. Sets ``n_labels_``. ``evidence``: each
        row's evidence targets, or None.
        """
        n = Y.shape[0]
        self.n_labels_ = Y.shape[1]
        tr, dv = np.arange(n), None
        if dev_docs is None and self.validation_fraction:
            tr, dv = split_validation(n, self.validation_fraction, self.random_state)
            dev_docs, Y_dev = [docs[i] for i in dv], Y[dv]
        pos = positives_list(Y)
        return FitData(Y, docs, tr, dv, [docs[i] for i in tr], [pos[i] for i in tr], dev_docs,
                       Y_dev, None if Y_dev is None else positives_list(Y_dev),
                       None if evidence is None else [evidence[i] for i in tr])

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
                self._continue_training(make_dataset(),
                                 epochs=max(0, self.max_epochs - len(self.history)))
        elif fit is not None:
            fit(make_dataset)
        else:
            self._continue_training(make_dataset())

    def _continue_training(self, dataset, **fit_params):
        """Train on a prepared dataset from the current state: skorch's ``partial_fit``.

        The training loop of ``fit`` (and of each ``stage1_weight`` candidate);
        ``epochs=`` limits the epochs. Users continue an interrupted fit with
        ``fit(..., resume=True)``. With a DeepSpeed ``strategy`` the same
        loop runs with DeepSpeed's step (:func:`~xplant.neural.distributed.fit_deepspeed`).
        """
        if self._uses_deepspeed():
            from .distributed import fit_deepspeed
            return fit_deepspeed(self, dataset, **fit_params)
        return NeuralNet.partial_fit(self, dataset, None, **fit_params)

    # -- the DeepSpeed strategy's hooks in skorch's loop (xplant.neural.distributed) -------
    #: the running :class:`~xplant.neural.distributed._trainer.DeepSpeedRun` while a
    #: DeepSpeed fit trains; None otherwise
    _deepspeed_run_ = None

    def train_step(self, batch, **fit_params):
        """skorch's optimizer step; in a DeepSpeed fit, the engine's backward and step.

        Outside DeepSpeed, every :data:`~xplant.neural.training._torch_state.SUBNORMAL_SWEEP_STEPS`-th
        step of an epoch ends with :func:`~xplant.neural.training._torch_state.zero_subnormal_state`,
        which keeps the optimizer's CPU moments out of the slow subnormal range.
        """
        if self._deepspeed_run_ is not None:
            return self._deepspeed_run_.train_step(self, batch, **fit_params)
        step = super().train_step(batch, **fit_params)
        if len(self.history) and len(self.history[-1]["batches"]) % SUBNORMAL_SWEEP_STEPS == 0:
            zero_subnormal_state(self.optimizer_)
        return step

    def get_default_callbacks(self):
        """The estimator's callbacks; a DeepSpeed fit adds rank 0's epoch record and
        DeepSpeed's checkpoints (:func:`~xplant.neural.distributed._trainer.deepspeed_callbacks`)."""
        callbacks = super().get_default_callbacks()
        if self._uses_deepspeed():
            from .distributed._trainer import deepspeed_callbacks
            callbacks = deepspeed_callbacks(self, callbacks)
        return callbacks

    def _freezes_by_requires_grad(self):
        """Whether a frozen parameter group may stop computing gradients (``requires_grad``).

        Not in a DeepSpeed fit: ZeRO fixes the trained parameters when the
        engine is built, so a frozen group trains at learning rate 0 there.
        """
        return self._deepspeed_run_ is None

    @available_if(lambda self: False)
    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Not offered: skorch's ``partial_fit`` reads tensors, not documents.

        Continue an interrupted fit with ``fit(..., resume=True)``.
        """

    def build_encoder(self):
        """The backbone for the fitted MIGRelevance (the ``module__`` architecture)."""
        enc = encoder_settings(self._module_settings())
        return build_backbone(self.backbone, relevance=self.relevance_,
                              lora=enc.pop("backbone_options"), **enc)

    def make_optimizer(self, params):
        """``self.optimizer`` over ``params`` (tensors or param-group dicts).

        Its keyword arguments are the ``optimizer__`` parameters (AdamW's
        own defaults otherwise, ``weight_decay=0.01``); ``optimizer__lr``
        replaces :meth:`effective_lr`, as in skorch.

        Parameters
        ----------
        params : iterable of Tensor or of dict
            The parameters to optimize, or torch parameter groups.
        """
        kwargs = self.get_params_for("optimizer")
        kwargs.pop("lr", None)                 # effective_lr reads it
        if self.optimizer in (torch.optim.AdamW, torch.optim.Adam):
            kwargs.setdefault("fused", True)   # one kernel per step, much faster on CPU
        self.optimizer_ = self.optimizer(params, lr=self.effective_lr(), **to_python(kwargs))
        return self

    def get_split_datasets(self, X, y=None, **fit_params):
        return X, self.dev_dataset_

    def get_iterator(self, dataset, training=False):
        """Length-bucketed batches; ``iterator_train__min_epoch_docs`` and
        ``iterator_train__max_epoch_docs`` set the documents drawn per training
        epoch, any other ``iterator_{train,valid}__`` key goes to the DataLoader.
        In a DeepSpeed fit the training batches are this rank's share of each
        global batch, one item per optimizer step."""
        epoch = epoch_settings(self) if training else {"min_epoch_docs": None,
                                                       "max_epoch_docs": None}
        loader = self.get_params_for("iterator_train" if training else "iterator_valid")
        for key in epoch:
            loader.pop(key, None)
        collate = self.collate(self.relevance_.pad_id_)
        if training and self._deepspeed_run_ is not None:    # each rank its shard of every batch
            return self._deepspeed_run_.train_batches(self, dataset, collate,
                                                      min_docs=epoch["min_epoch_docs"],
                                                      max_docs=epoch["max_epoch_docs"], **loader)
        sampler = LengthBucketSampler(dataset.lengths(), self.batch_size, shuffle=training,
                                      generator=self.rng_, min_docs=epoch["min_epoch_docs"],
                                      max_docs=epoch["max_epoch_docs"])
        return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, **loader)

    def epoch_documents(self, n_docs):
        """Documents one training epoch draws from a training set of ``n_docs``.

        The rule of the batches the fit trains on: ``n_docs``, repeated up
        to ``iterator_train__min_epoch_docs`` and cut to
        ``iterator_train__max_epoch_docs`` (for :class:`AttentionPlanter`,
        4,096 by default).

        Parameters
        ----------
        n_docs : int
            Training documents.

        Returns
        -------
        int

        Examples
        --------
        >>> from xplant.neural import AttentionPlanter, PlantClassifier
        >>> AttentionPlanter().epoch_documents(7700), PlantClassifier().epoch_documents(7700)
        (4096, 7700)
        >>> PlantClassifier(iterator_train__min_epoch_docs=1000).epoch_documents(256)
        1024
        """
        e = epoch_settings(self)
        return len(LengthBucketSampler(np.zeros(int(n_docs)), 1, min_docs=e["min_epoch_docs"],
                                       max_docs=e["max_epoch_docs"]))

    def effective_lr(self):
        """The learning rate the optimizer gets (float): ``optimizer__lr``, else ``lr``,
        else (``lr=None``) the estimator's default for its backbone (``_default_lr``)."""
        given = self.get_params_for("optimizer").get("lr", self.lr)
        return float(self._default_lr() if given is None else given)

    def _check_params(self):
        """Validate every setting before anything is fitted; raise naming the fix.

        Each declared setting of :meth:`resolved_params` (named, or reached
        through a prefix: ``module__pool_size``, ``criterion__gamma``, ...)
        against the estimator's ``_parameter_constraints``
        (:mod:`._settings`) by :func:`xplant._params.check_params`; then the
        relations between settings.
        """
        check_params(type(self).__name__, self.resolved_params(), self._parameter_constraints)
        merge_channel(self, {"lr": "lr"}, "optimizer")    # lr, optimizer__lr: one setting
        epoch = epoch_settings(self)
        if None not in (epoch["min_epoch_docs"], epoch["max_epoch_docs"]) and \
                epoch["max_epoch_docs"] < epoch["min_epoch_docs"]:
            raise ValueError(f"iterator_train__max_epoch_docs={epoch['max_epoch_docs']} is below "
                             f"iterator_train__min_epoch_docs={epoch['min_epoch_docs']}; make "
                             "max >= min (equal values give every training size the same steps "
                             "per epoch)")
