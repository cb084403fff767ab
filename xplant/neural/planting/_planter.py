"""Stage 1 of PLANT: AttentionPlanter plants label-wise attention by learning to rank.

Saha Roy, Wallace & Aslam, "Don't Pay Attention, PLANT It", arXiv
2410.23066, §3.1.
"""

import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils.metaestimators import available_if
from skorch.callbacks import PrintLog
from torch.utils.data import DataLoader

from ..._labels import label_frequency
from .._base import PlantNetBase
from ..training._callbacks import AttentionNDCG, FiniteLossGuard, WarmupCosine
from ..training._checkpoint import TrainingCheckpoint, read_checkpoint, restore_checkpoint
from .._inputs import encode
from ..training._torch_state import torch_state_restored
from ._targets import borrow_queries, description_targets, merge_targets, prepare_descriptions
from .._settings import (PLANTER_CONSTRAINTS, STAGE1_CRITERION_DEFAULTS, epoch_settings,
                         merge_channel, network_settings)
from ._defaults import PLANTING_EPOCH_DOCS, default_planting_lr
from ..training._data import LengthBucketSampler, truncate
from ._items import Stage1Collate, Stage1Dataset
from . import _states
from ._states import StatesDataset, describe_cache, encode_states, state_cache_bytes
from ..backbones import backbone_kind
from ..losses import Stage1Loss, graded_ndcg
from ..modules import PlanterNet


def tf_relevance(docs, Y, n_tokens, top_k=50, ignore_ids=()):
    """The ``planter__target="tf"`` ablation target: label-conditional counts.

    r[l, t] = number of training documents with label l that contain token t
    (n11 of MIG's contingency table, :func:`xplant.relevance.mig_scores`,
    without the MI transform), top-k per label, ties to the smaller token id.

    Returns
    -------
    scipy.sparse.csr_matrix of float64, shape (n_labels, n_tokens)
    """
    rows = np.repeat(np.arange(len(docs)), [len(np.unique(d)) for d in docs])
    cols = np.concatenate([np.unique(d) for d in docs]) if docs else np.zeros(0, np.int64)
    B = sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(docs), n_tokens))
    if len(ignore_ids):
        keep = np.ones(n_tokens)
        keep[list(ignore_ids)] = 0
        B = (B @ sp.diags(keep)).tocsr()
        B.eliminate_zeros()
    C = (sp.csr_matrix(Y).T @ B).tocsr()
    out_r, out_c, out_v = [], [], []
    for l in range(C.shape[0]):
        lo, hi = C.indptr[l], C.indptr[l + 1]
        t, v = C.indices[lo:hi], C.data[lo:hi]
        order = np.lexsort((t, -v))[:top_k]
        out_r.append(np.full(len(order), l))
        out_c.append(t[order])
        out_v.append(v[order])
    if not out_r:
        return sp.csr_matrix((C.shape[0], n_tokens))
    return sp.csr_matrix((np.concatenate(out_v), (np.concatenate(out_r), np.concatenate(out_c))),
                         shape=(C.shape[0], n_tokens))


class AttentionPlanter(PlantNetBase):
    """Stage 1 of PLANT: train label queries so attention ranks tokens by MIG.

    For each document, a few labels are sampled (the document's own labels
    first; see :class:`~xplant.neural.planting._items.Stage1Dataset`), and the label's
    attention scores over the document's tokens are trained with a
    learning-to-rank loss so that the tokens of T_l (its top-k MIG tokens)
    come first, in MIG order.

    Parameters
    ----------
    backbone : str, default="cnn"
        "cnn", "bigru", "hf", "hf:<folder>" or "llm:<folder>".
    relevance : MIGRelevance or None
        Fitted on raw texts when ``fit`` gets texts; ignored for a token corpus.
    target : {"mig", "tf"}, default="mig"
        Ranking target; "tf" is the paper's ablation (label-conditional counts).
    labels_per_doc, max_relevant, n_negatives : int, default=16, 32, 32
        Stage 1 sampling sizes per document.
    train_encoder : bool, default=True
        Train the backbone with the attention (word backbones learn from
        scratch); False freezes it: it gets no gradient and runs in
        evaluation mode (no dropout), so its hidden states are a function
        of the document alone, and Stage 1 can run on them cached
        (``iterator_train__state_cache``, Notes).
    lr : float or None, default=None
        Peak learning rate of AdamW, warmup then cosine decay. None:
        :func:`~xplant.neural.default_planting_lr`, 3e-3 for a word backbone
        trained from scratch, the paper's 5e-4 for a pretrained encoder.
        ``optimizer__lr`` replaces it, as in skorch.
    warmup : float, default=0.1
        Share of the steps with a linear warmup.
    max_epochs : int, default=10
        Stage 1 epoch budget.
    batch_size : int, default=16
        Documents per batch (batches are bucketed by length).
    validation_fraction : float, default=0.1
        Seeded dev split when no ``validation_data`` is given.
    description_max_frequency : int, default=0
        With ``label_descriptions`` given to ``fit``: labels with at most
        this many training documents take their description's corpus tokens
        as Stage 1 targets, ranked above their MIG tokens (0: only labels
        never seen in training). See :mod:`xplant.neural.planting._targets`.
    random_state : int, default=0
        Seed of the dev split, the sampling and the initial weights.
    n_jobs : int or None
        torch threads inside ``fit`` (restored after it).
    strategy : "skorch", "deepspeed" or DeepSpeedStrategy, default="skorch"
        "deepspeed" (or :class:`~xplant.neural.distributed.DeepSpeedStrategy`
        with a config) trains with :func:`xplant.neural.distributed.fit_deepspeed`.
    checkpoint_dir : str, Path or None
        Folder of per-epoch checkpoints (see PlantClassifier); the
        classifier sets it to ``<its checkpoint_dir>/stage1``.
    **kwargs
        skorch's parameters (``device``, ``verbose``, ...) and the prefixed
        families of :mod:`xplant.neural._settings`: ``module__`` (the
        architecture: ``embedding_dim`` 100, ``hidden_dim`` 128,
        ``attention_dim`` 128, ``kernel_size`` 5, ``dropout`` 0.2, ``glove``
        False, ``backbone_options`` None, ``max_length`` 4096; inside a
        :class:`PlantClassifier` the classifier's, which it sets),
        ``criterion__`` (Stage 1's ranking loss,
        :class:`~xplant.neural.losses.Stage1Loss`: ``kind`` "lambda",
        LambdaLoss with ``|ΔnDCG@k|`` weights (the paper's), or
        "lambdarank", "ranknet", "mse" (:func:`xplant.neural.losses.stage1_loss`);
        ``k`` 50, the cut-off of those weights and of the dev attention
        nDCG, which covers MIG's whole top-50 list (chosen on dev:
        :doc:`/benchmarks/evidence`, section "Ablation and low-data
        curve"); ``sigma`` 1.0, the pairwise logistic's scale; the named
        ``stage1_loss``, ``ndcg_k`` and ``sigma`` of earlier releases raise a
        TypeError naming these), ``optimizer__``
        (``weight_decay`` 0.01), ``iterator_train__`` (``min_epoch_docs`` None,
        ``max_epoch_docs`` 4,096: documents drawn per epoch, a fresh random
        subset of a larger training set each epoch; None: every document;
        ``state_cache`` "auto": a frozen backbone's states computed once,
        Notes).

    Attributes
    ----------
    module_ : PlanterNet
    relevance_ : MIGRelevance
    parts_ : dict of str to object
        The fitted parts ``relevance_`` and the label-space attributes read:
        ``"relevance"`` and ``"label_space"`` (:class:`xplant._label_space.LabelSpace`).
    target_relevance_ : scipy.sparse.csr_matrix (n_labels, n_tokens)
    initial_attention_ndcg_ : float
        Dev attention nDCG@k before training (random queries).
    attention_ndcg_ : float
        Dev attention nDCG@k after training.
    n_labels_ : int
    n_described_labels_ : int
        Labels given description targets (0 without ``label_descriptions``).
    n_borrowed_queries_ : int
        Labels without any target whose query was set from their relatives'
        (0 without ``label_parents``).
    n_evidence_pairs_ : int
        Training (document, label) pairs planted on their gold evidence
        spans (0 without ``evidence``).
    evidence_record_ : dict or None
        :func:`xplant.evidence.check_evidence`'s counts of the evidence
        given to ``fit`` (None without).
    state_cache_dtype_ : str or None
        The dtype the backbone's states were cached in (``state_cache``
        resolved), or None when they were recomputed at every batch.
    state_cache_bytes_ : int
        Size of the cached states in bytes (0 without a cache): the
        training and dev documents' tokens × hidden size × bytes per value.
    history : skorch History
        ``valid_attention_ndcg`` on the last epoch only (every epoch with
        ``callbacks__attention_ndcg__each_epoch=True``).

    Notes
    -----
    **Stage 1 on cached states.** ``iterator_train__state_cache`` is one of
    "auto" (the default), "float32", "bfloat16", "float16" or None. With a
    frozen backbone (``train_encoder=False``) each training and dev
    document's hidden states are computed once, before the first epoch
    (:mod:`~xplant.neural.planting._states`), and the epochs run only the
    label attention on them (training and dev-loss batches; the dev
    attention nDCG is scored on recomputed states, as the planting is used
    later); the batches, their order and every random draw are those of
    recomputing. A float32 cache gives the planting of
    recomputing (the same weights and dev nDCG: bit for bit in the tests,
    a word CNN and a small BERT on a CPU; in general up to the last float32
    digits, as the encoder then runs on other batch shapes). bfloat16 and
    float16 halve the memory and round each state to 8 or 11 significant
    bits: the weights stayed within 5e-3 and the dev attention nDCG within
    2e-3 of recomputing's in the tests (measured: 1.1e-3 and 1.7e-4 in
    bfloat16). The cache takes ``n_tokens × hidden × 4`` bytes in float32,
    ``× 2`` in 16 bits (``state_cache_bytes_``; 1,536 and 768 bytes per
    token for MiniLM's 384 dimensions); above 2 GiB
    (:data:`~xplant.neural.planting._states.STATE_CACHE_MEMORY`) it is a
    file under the temporary folder (``TMPDIR``), read back batch by batch
    and deleted at the end of ``fit``. A resumed fit builds it again (a
    checkpoint never holds it). "auto" caches a frozen pretrained backbone
    ("hf", "llm") under ``strategy="skorch"`` when the epochs left would
    encode the documents more than once in all (epochs × (epoch documents
    + dev documents) above the documents), in float32 where that fits in
    2 GiB, else in bfloat16; a word backbone recomputes (its states cost
    little; name a dtype to cache it anyway). A dtype needs
    ``train_encoder=False`` and ``strategy="skorch"``; None always
    recomputes.

    Examples
    --------
    See :class:`PlantClassifier`, which runs this planter inside its own fit.
    """

    def __init__(self, backbone="cnn", *, relevance=None, target="mig",
                 labels_per_doc=16, max_relevant=32, n_negatives=32,
                 train_encoder=True, lr=None, warmup=0.1, max_epochs=10, batch_size=16,
                 validation_fraction=0.1, random_state=0, n_jobs=None,
                 description_max_frequency=0, strategy="skorch", checkpoint_dir=None, **kwargs):
        super().__init__(lr=lr, max_epochs=max_epochs, batch_size=batch_size, **kwargs)
        self.backbone = backbone
        self.relevance = relevance
        self.target = target
        self.labels_per_doc = labels_per_doc
        self.max_relevant = max_relevant
        self.n_negatives = n_negatives
        self.train_encoder = train_encoder
        self.warmup = warmup
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.description_max_frequency = description_max_frequency
        self.strategy = strategy
        self.checkpoint_dir = checkpoint_dir

    collate = Stage1Collate
    _default_module, _default_criterion = PlanterNet, Stage1Loss
    _parameter_constraints = PLANTER_CONSTRAINTS     # every setting's valid values (_settings)
    #: a 1-D multi-class y plants one query per class, as MIGRelevance scores tokens for any labelling
    _classes_1d = True
    #: a Stage 1 epoch draws at most PLANTING_EPOCH_DOCS documents unless iterator_train__ says;
    #: a frozen backbone's states are cached by the rule of "auto" (iterator_train__state_cache)
    _epoch_defaults = {"min_epoch_docs": None, "max_epoch_docs": PLANTING_EPOCH_DOCS,
                       "state_cache": "auto"}

    @available_if(lambda self: False)
    def predict(self, X):
        """Not offered: Stage 1 predicts no labels (skorch's ``predict`` reads tensors).

        The planted attention is read with :meth:`attention`, or trained on
        by :class:`PlantClassifier`.
        """

    @available_if(lambda self: False)
    def predict_proba(self, X):
        """Not offered, as :meth:`predict`."""

    # -- skorch ladder -----------------------------------------------------
    @property
    def _default_callbacks(self):
        base = [cb for cb in super()._default_callbacks if cb[0] != "print_log"]
        return base + [("guard", FiniteLossGuard()), ("schedule", WarmupCosine(self.warmup)),
                       ("attention_ndcg", AttentionNDCG(self._criterion_defaults()["k"]))] + \
            ([("checkpoint", TrainingCheckpoint(self.checkpoint_dir))]
             if self.checkpoint_dir is not None else []) + [("print_log", PrintLog())]

    def _default_lr(self):
        """``lr=None``: :func:`default_planting_lr` of the backbone."""
        return default_planting_lr(self.backbone)

    def initialize_module(self):
        self.module_ = self.module(self.build_encoder(), self.n_labels_,
                                   frozen_encoder=not self.train_encoder,
                                   **network_settings(self._module_settings()))
        return self

    def _check_params(self):
        """The shared checks, then: a ``state_cache`` dtype needs a frozen backbone under skorch."""
        super()._check_params()
        cache = epoch_settings(self)["state_cache"]
        if cache not in ("auto", None) and (self.train_encoder or self._uses_deepspeed()):
            raise ValueError(f"iterator_train__state_cache={cache!r} caches a frozen backbone's "
                             "states: it needs train_encoder=False and strategy='skorch' (a "
                             "trained backbone's states change at every step); use 'auto' or None")

    def initialize_criterion(self):
        self.criterion_ = self.criterion(**self._criterion_defaults())
        return self

    def _criterion_defaults(self):
        """The ranking loss's settings: ``criterion__kind``, ``__k`` and ``__sigma``, with
        their defaults (:data:`~xplant.neural._settings.STAGE1_CRITERION_DEFAULTS`)."""
        return merge_channel(self, None, "criterion", STAGE1_CRITERION_DEFAULTS)

    def initialize_optimizer(self, triggered_directly=None):
        params = []
        for name, p in self.module_.named_parameters():
            if name.startswith("encoder.") and not self.train_encoder:
                p.requires_grad_(False)
                continue
            params.append(p)
        return self.make_optimizer(params)

    def infer(self, x, **fit_params):
        return self.module_(x.to(self.device))

    def _special_ids(self):
        rel = self.relevance_
        ids = {rel.pad_id_, rel.unk_id_}
        return {i for i in ids if i is not None and i >= 0}

    def _stage1_dataset(self, docs, positives, deterministic=False, full=False, evidence=None):
        big = 10 ** 9
        return Stage1Dataset(docs, positives, self.target_relevance_,
                             labels_per_doc=self.labels_per_doc,
                             max_relevant=big if full else self.max_relevant,
                             n_negatives=big if full else self.n_negatives,
                             generator=self.rng_, deterministic=deterministic,
                             ignore_ids=self._special_ids(), evidence=evidence)

    def fit(self, X, Y, validation_data=None, *, resume=False, label_names=None,
            label_descriptions=None, label_synonyms=None, label_parents=None, parent_descriptions=None,
            evidence=None):
        """Plant the attention.

        Parameters
        ----------
        X : list of str, token corpus from MIGRelevance.transform, or {ndarray, sparse matrix} of shape (n, n_features)
            Raw texts, a token corpus, or a non-negative document-token
            count matrix read as bags of token ids (as
            :class:`~xplant.relevance.MIGRelevance` reads one; a word
            backbone only).
        Y : {array-like, sparse matrix} of shape (n_samples, n_labels), 1-D y, or label lists
            Read by :func:`xplant._labels.check_targets`; a 1-D y of more
            than two classes becomes one column per class, as
            :class:`~xplant.relevance.MIGRelevance` reads it.
        validation_data : tuple (X_dev, Y_dev) or None
            Dev documents (texts or a token corpus of the same MIGRelevance)
            and labels; else a seeded ``validation_fraction`` split.
        resume : bool, default=False
            Continue from the latest checkpoint in ``checkpoint_dir`` (weights,
            optimizer, schedule, history and RNG states); none there yet:
            train from the start.
        label_names : array-like of shape (n_labels,) or None
            Names of Y's columns (or the label space of label lists), stored
            as ``classes_``; ``label_parents`` refer to them.
        label_descriptions : sequence of str of length n_labels, optional
            Labels with at most ``description_max_frequency`` training
            documents are planted on the corpus tokens of their description
            and synonyms. Without it (and without synonyms) the planting is
            exactly the plain one.
        label_synonyms : sequence of list of str of length n_labels, optional
            Each label's synonyms, planted like its description.
        label_parents : sequence of list of str of length n_labels, optional
            A label left without any target starts from the mean planted
            query of the labels sharing its nearest labelled ancestor.
        parent_descriptions : dict of str to str, optional
            Accepted for a common signature with
            :class:`~xplant.unseen.DescriptionRanker`; not used for targets.
        evidence : sequence of length n_samples, optional
            Gold evidence: each document's mentions, ``[{"label": name,
            "spans": [[start, end], ...]}, ...]`` (character offsets into
            X's texts, end exclusive), or None; checked by
            :func:`xplant.evidence.check_evidence`. A (document, label) pair
            with a mention is planted on the tokens inside its spans, graded
            by idf and ranked above the label's MIG tokens in that document
            (:func:`~xplant.neural._inputs.evidence_targets`); every other
            pair keeps its MIG targets. Needs raw texts X. The dev split's
            attention nDCG stays measured on MIG targets.

        Returns
        -------
        self : AttentionPlanter
            With each label's attention query planted (``module_``).

        Raises
        ------
        ValueError
            Bad parameters or inputs (see ``check_targets``); ``resume=True``
            without ``checkpoint_dir``; descriptions, synonyms or parents of
            the wrong length or type; evidence that
            :func:`~xplant.evidence.check_evidence` refuses, or evidence with X
            not raw texts.
        """
        with torch_state_restored():
            data = self._prepare_fit(X, Y, validation_data, resume=resume,
                                     label_names=label_names, evidence=evidence)
            return self._fit_prepared(data, resume=resume, label_descriptions=label_descriptions,
                                      label_synonyms=label_synonyms, label_parents=label_parents)

    def _fit_prepared(self, data, *, resume=False, label_descriptions=None, label_synonyms=None,
                      label_parents=None):
        """Stage 1 from checked inputs (:class:`~xplant.neural._base.FitData`).

        :class:`PlantClassifier` calls this with its own prepared training
        rows, so that the targets are checked and the corpus encoded once.
        """
        Y, train_docs, train_pos = data.Y, data.train_docs, data.train_pos
        dev_docs, dev_pos = data.dev_docs, data.dev_pos
        if self.target == "mig":
            self.target_relevance_ = sp.csr_matrix(self.relevance_.relevance_)
        else:
            top_k = getattr(self.relevance_, "top_k", None) or 50
            self.target_relevance_ = tf_relevance(train_docs, Y[data.tr],
                                                  len(self.relevance_.vocabulary_), top_k,
                                                  self._special_ids())
        described = label_descriptions is not None or label_synonyms is not None
        ancestor = None
        self.n_described_labels_ = self.n_borrowed_queries_ = 0
        if described or label_parents is not None:
            texts, ancestor = prepare_descriptions(self.n_labels_, label_descriptions, label_synonyms,
                                                   label_parents, self.classes_)
        if described:
            freq = label_frequency(Y)
            rare = np.flatnonzero(freq <= self.description_max_frequency)
            desc = description_targets(self.relevance_, texts, rare,
                                       top_k=getattr(self.relevance_, "top_k", None) or 50,
                                       ignore_ids=self._special_ids())
            self.n_described_labels_ = int(np.count_nonzero(np.diff(desc.indptr)))
            self.target_relevance_ = merge_targets(self.target_relevance_, desc)
        train_ds = self._stage1_dataset(train_docs, train_pos, evidence=data.train_evidence)
        self.n_evidence_pairs_ = sum(len(np.unique(e[0])) for e in data.train_evidence or ()
                                     if e is not None)
        self.dev_dataset_ = None if dev_docs is None else \
            self._stage1_dataset(dev_docs, dev_pos, deterministic=True)
        self.dev_full_ = None if dev_docs is None else \
            self._stage1_dataset(dev_docs, dev_pos, deterministic=True, full=True)
        epoch = epoch_settings(self)
        self.n_batches_per_epoch_ = len(LengthBucketSampler(train_ds.lengths(), self.batch_size,
                                                            min_docs=epoch["min_epoch_docs"],
                                                            max_docs=epoch["max_epoch_docs"]))
        self.n_fit_train_ = len(train_docs)
        self.initialize()
        self.initial_attention_ndcg_ = (self._attention_ndcg(self.dev_full_)
                                        if self.dev_full_ is not None else float("nan"))
        ckpt = read_checkpoint(self.checkpoint_dir) if resume else None
        if ckpt is not None:
            restore_checkpoint(self, ckpt)
        cache = self._cache_states(train_docs, dev_docs, ckpt)
        plain_dev = self.dev_dataset_
        try:
            if cache is not None:
                # the training and dev-loss batches read the cache; the dev attention nDCG
                # (dev_full_, scored once) reads recomputed states, as the planting is used
                train_ds = StatesDataset(train_ds, cache)
                if plain_dev is not None:
                    self.dev_dataset_ = StatesDataset(plain_dev, cache, len(train_docs))
            self._train(lambda: train_ds, ckpt)
        finally:
            self.dev_dataset_ = plain_dev
            if cache is not None:
                cache.close()
        self.attention_ndcg_ = float("nan")
        if self.dev_full_ is not None:
            # the callback scores the last planned epoch; a fit stopped before it scores here
            if not len(self.history):
                self.attention_ndcg_ = self._attention_ndcg(self.dev_full_)
            elif "valid_attention_ndcg" not in self.history[-1]:
                self.history.record("valid_attention_ndcg", self._attention_ndcg(self.dev_full_))
            if len(self.history):
                self.attention_ndcg_ = self.history[-1, "valid_attention_ndcg"]
        if label_parents is not None:
            trained = np.diff(sp.csr_matrix(self.target_relevance_).indptr) > 0
            q = self.module_.attention.label_queries
            new, self.n_borrowed_queries_ = borrow_queries(q.detach().cpu().numpy(), ancestor, trained)
            with torch.no_grad():
                q.copy_(torch.as_tensor(new, dtype=q.dtype))
        return self

    def _state_cache_dtype(self, n_train, n_dev, epochs_left, fp32_bytes):
        """``state_cache`` resolved: a key of ``STATE_DTYPES``, or None (recompute)."""
        given = epoch_settings(self)["state_cache"]
        if given != "auto":
            return given
        if (self.train_encoder or backbone_kind(self.backbone) == "word" or self._uses_deepspeed()
                or epochs_left * (self.epoch_documents(n_train) + n_dev) <= n_train + n_dev):
            return None
        return "float32" if fp32_bytes <= _states.STATE_CACHE_MEMORY else "bfloat16"

    def _cache_states(self, train_docs, dev_docs, ckpt):
        """The frozen backbone's states of the training then dev documents, or None.

        Built after a checkpoint is restored (a cache is never saved: a
        resumed fit builds it again), only when epochs are left to train.
        Sets ``state_cache_dtype_`` and ``state_cache_bytes_``.
        """
        self.state_cache_dtype_, self.state_cache_bytes_ = None, 0
        done = ckpt is not None and ckpt["state"]["completed"]
        epochs_left = 0 if done else self.max_epochs - len(self.history)
        docs = list(train_docs) + list(dev_docs or ())
        h = self.module_.encoder.hidden_size
        dtype = self._state_cache_dtype(len(train_docs), len(dev_docs or ()), epochs_left,
                                        state_cache_bytes(docs, h, "float32"))
        if dtype is None or epochs_left <= 0:
            return None
        start = time.perf_counter()
        cache = encode_states(self.module_.encoder, docs, pad_id=self.relevance_.pad_id_,
                              batch_size=self.batch_size, device=self.device, dtype=dtype,
                              memory=_states.STATE_CACHE_MEMORY)
        self.state_cache_dtype_, self.state_cache_bytes_ = dtype, cache.nbytes
        if self.verbose:
            print(describe_cache(cache, len(docs), time.perf_counter() - start), flush=True)
        return cache

    # -- attention -----------------------------------------------------------
    @torch.no_grad()
    def _attention_ndcg(self, dataset):
        """Mean graded attention nDCG@k over dev (document, label) items."""
        self.module_.eval()
        vals, k = [], self._criterion_defaults()["k"]
        loader = DataLoader(dataset, batch_size=self.batch_size,
                            collate_fn=Stage1Collate(self.relevance_.pad_id_))
        for x, (rel, valid) in loader:
            s = self.module_(x)
            v = graded_ndcg(s, rel, valid, k)
            vals.append(v[~torch.isnan(v)])
        self.module_.train()
        allv = torch.cat(vals) if vals else torch.zeros(0)
        return float(allv.mean()) if allv.numel() else float("nan")

    @torch.no_grad()
    def attention(self, X, labels):
        """Raw attention scores of the given labels over each document's tokens.

        Parameters
        ----------
        X : token corpus or list of str, length n
            The documents.
        labels : array-like of int of shape (m,)
            The label columns whose scores are returned.

        Returns
        -------
        list of ndarray of float32 of shape (m, n_tokens_i)
        """
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self, "module_")
        docs = truncate(encode(X, self.relevance_, self._max_length), self._max_length)
        labels = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        self.module_.eval()
        out = []
        for d in docs:
            ids = torch.as_tensor(d if len(d) else np.array([self.relevance_.pad_id_ or 0]))[None]
            mask = torch.ones_like(ids, dtype=torch.bool) if len(d) else torch.zeros_like(ids, dtype=torch.bool)
            s = self.module_.attention_scores(ids, mask, labels[None])[0]
            out.append(s[:, :len(d)].numpy())
        return out

    # -- persistence ---------------------------------------------------------
    def save_planting(self, path):
        """Save the planted encoder and attention: safetensors + JSON, no pickle.

        Parameters
        ----------
        path : str or Path
            A new or empty folder.

        Returns
        -------
        Path
        """
        from sklearn.utils.validation import check_is_fitted
        from ...persistence._codec import write_arrays, write_json
        check_is_fitted(self, "module_")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().contiguous().clone() for k, v in self.module_.state_dict().items()}
        write_arrays(path / "planted.safetensors", state)
        meta = {"format": "xplant-planting-1", "n_labels": int(self.n_labels_),
                "tokenizer_fingerprint": getattr(self.relevance_, "tokenizer_fingerprint_", None),
                "arch": {"backbone": self.backbone, **self._module_settings()},
                "attention_ndcg": self.attention_ndcg_,
                "initial_attention_ndcg": self.initial_attention_ndcg_,
                # labels without a training document planted from their texts or ancestors
                "planted_from_texts": bool(getattr(self, "n_described_labels_", 0)
                                           or getattr(self, "n_borrowed_queries_", 0))}
        write_json(path / "planting.json", meta, indent=2)
        return path


def load_planting(path):
    """Read a planting saved by :meth:`AttentionPlanter.save_planting`.

    Parameters
    ----------
    path : str or Path
        The folder that ``save_planting`` wrote.

    Returns
    -------
    state : dict of str to torch.Tensor
    meta : dict

    Raises
    ------
    FileNotFoundError
        When the folder lacks ``planted.safetensors`` or ``planting.json``.
    """
    from ..._files import read_json_object
    from ...persistence._codec import read_arrays
    path = Path(path)
    if not (path / "planted.safetensors").is_file() or not (path / "planting.json").is_file():
        raise FileNotFoundError(f"{path} is not a planting folder (needs planted.safetensors and "
                                "planting.json, as written by AttentionPlanter.save_planting)")
    return (read_arrays(path / "planted.safetensors", torch=True),
            read_json_object(path / "planting.json", "a planting's record"))
