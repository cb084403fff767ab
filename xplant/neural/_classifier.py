"""PlantClassifier: Stage 2 of PLANT, leveraging planted attention.

Saha Roy, Wallace & Aslam, "Don't Pay Attention, PLANT It", arXiv
2410.23066, §3.2; PLANT.md §3 of this project.
"""

import numbers

import numpy as np
import torch
from skorch.callbacks import EarlyStopping, PrintLog, ProgressBar

from .._labels import label_frequency, label_prior
from ._base import PlantNetBase
from ._checkpoint import TrainingCheckpoint, read_checkpoint, restore_checkpoint
from ._callbacks import DevScoring, FiniteLossGuard, ProgressiveUnfreezing, metric_by_name
from ._common import check_param, to_python
from ._adjustment import check_logit_adjustment
from ._data import Stage2Collate, TokenDataset
from ._dev_choice import STAGE1_WEIGHT_FALLBACK
from ._fusion import FusionMixin
from ._inference import InferenceMixin
from ._planting import PlantingMixin
from ._shortlist import check_fusion, check_n_candidates, check_shortlist
from .backbones import backbone_kind
from .losses import PlantLoss, stage1_loss
from .modules import PlantNet


def _silent(*args, **kwargs):
    """A picklable no-op sink for EarlyStopping's messages."""


#: Stage 2 learning rates of ``lr=None`` (docs/evidence.md, "The Stage 2
#: learning rate"). A word backbone trained from scratch whose Stage 2 keeps
#: the Stage 1 ranking loss (``stage1_weight`` > 0) trains at 1e-2: at 1e-3
#: every such CodiEsp fit was still rising at its last epoch, and 1e-2 lifts
#: dev MAP on CodiEsp-D (28.0 to 37.4) and CodiEsp-P (22.7 to 26.2); it is 1.5
#: points behind on the EURLEX57K subset, where stage1_weight="dev" takes 0.
#: Without that loss 1e-2 lost on dev in three of four fits (PLANT at weight
#: 0 on CodiEsp-D and the EURLEX57K subset, plant=False on CodiEsp-P): 1e-3.
#: Pretrained encoders keep 1e-3 for the head, which :func:`default_phases`
#: divides further for their lower layers.
DEFAULT_LR = {"word, ranking loss kept": 1e-2, "word": 1e-3, "pretrained": 1e-3}


def default_lr(backbone, stage1_weight):
    """The Stage 2 learning rate that ``lr=None`` resolves to.

    Parameters
    ----------
    backbone : str
        A :class:`PlantClassifier` backbone ("cnn", "bigru", "hf", "hf:<folder>", ...).
    stage1_weight : float
        The weight of the Stage 1 ranking loss kept in Stage 2 (the fixed
        weight, or each candidate of ``stage1_weight="dev"``).

    Returns
    -------
    float
        1e-2 for a word backbone with ``stage1_weight`` > 0, else 1e-3
        (:data:`DEFAULT_LR`).

    Raises
    ------
    ValueError
        For an unknown backbone.

    Examples
    --------
    >>> default_lr("cnn", 0.1), default_lr("cnn", 0.0), default_lr("hf", 0.1)
    (0.01, 0.001, 0.001)
    """
    if backbone_kind(backbone) != "word":
        return DEFAULT_LR["pretrained"]
    return DEFAULT_LR["word, ranking loss kept" if stage1_weight > 0 else "word"]


def default_phases(backbone, lr):
    """Progressive unfreezing phases (epoch, group, lr) per backbone kind.

    Word backbones (trained from scratch on a CPU): the head trains alone for
    2 epochs, then attention and encoder join at the same rate. Pretrained
    encoders follow the paper's order with smaller rates for lower layers.
    """
    if backbone_kind(backbone) == "word":
        return [(0, "head", lr), (2, "attention", lr), (2, "encoder", lr), (2, "embeddings", lr)]
    return [(0, "head", lr), (2, "attention", lr / 10), (4, "encoder", lr / 50),
            (6, "intermediate", lr / 100), (6, "embeddings", lr / 100)]


class PlantClassifier(PlantingMixin, InferenceMixin, FusionMixin, PlantNetBase):
    """PLANT: label-wise attention planted by learning to rank, then trained.

    ``fit`` runs Stage 1 (an :class:`AttentionPlanter`, unless ``plant=False``
    or ``plant_from`` names a saved planting) and Stage 2: label-wise
    attention A = softmax(S)(H W_v), feature boosting A' = B_a + A ⊙ B_m,
    adaptive pooling, a shared head plus per-label bias, focal loss with
    label smoothing over positives and hard negatives, and progressive
    unfreezing (PLANT.md §3).

    Parameters
    ----------
    backbone : str, default="cnn"
        "cnn", "bigru", "hf" (the bundled MiniLM-L6), "hf:<folder>", "llm:<folder>".
    plant : bool, default=True
        False leaves the label queries at their random initialisation (the
        LAAT-style baseline).
    planter : AttentionPlanter or None
        Stage 1 settings; cloned and fitted inside ``fit``. Its architecture
        parameters are overridden by this classifier's.
    plant_from : str or None
        Folder of a saved planting to reuse instead of running Stage 1.
    relevance : MIGRelevance or None
        Fitted inside ``fit`` when X is raw text; default
        ``MIGRelevance()`` with the backbone's tokenizer.
    stage1_target : {"mig", "tf"} or None
        Shorthand for ``planter__target`` (the paper's TF ablation).
    stage1_loss : {"lambda", "lambdarank", "ranknet", "mse"} or None
        Shorthand for the planter's loss.
    stage1_weight : float or "dev", default="dev"
        Keep the planting loss in Stage 2: the training loss becomes the
        Stage 2 loss plus ``stage1_weight`` times the planter's ranking loss
        (its kind and nDCG cutoff) on ranking items sampled from the same
        batch, so the attention keeps ranking each label's relevant tokens
        first while the classifier trains. 0 is the paper (the attention is
        free to drift once unfrozen). The targets are the planter's (MIG, or
        TF with ``stage1_target="tf"``), also with ``plant=False`` and after
        a resumed fit; with ``plant_from``, the fitted MIG. An xplant
        extension, measured in ``docs/evidence.md``: 0.1 is ahead on every
        CodiEsp shape (dev MAP +9 to +13 points), 0 on the EURLEX57K
        subset, so the default chooses on dev. "dev": Stage 1 once, then
        Stage 2 once per weight in {0, 0.1}, each from the planted state,
        keeping the best on the dev ``scoring``
        (:func:`~xplant.neural._dev_choice.fit_stage2_on_dev`); it costs
        Stage 1 plus two Stage 2 fits, under twice a fixed-weight fit.
        With a ``checkpoint_dir`` each candidate checkpoints into its own
        subfolder ``stage1_weight=<w>``. Without labelled dev data or with
        ``strategy="deepspeed"`` it warns and uses 0.1; give a number to fix
        the weight (and the cost) yourself.
    embedding_dim, hidden_dim, attention_dim, kernel_size : int
    dropout : float
    glove : bool
        Initialise word embeddings from GloVe 6B 50d (needs embedding_dim=50).
    backbone_options : dict or None
        Extra keyword arguments of the ``"llm:"`` backbone
        (:class:`~xplant.neural.backbones.LLMEncoder`), e.g.
        ``{"lora_r": 16, "load_in_4bit": True}``.
    max_length : int or None, default=4096
        Tokens kept per document (the first ones); longer documents are
        truncated by this documented rule. Pretrained encoders see them in
        windows of their maximum length.
    pool_size : int, default=128
    head : {"shared", "labelwise"}
    loss : {"focal", "bce"}
    gamma : float, default=2.0
    label_smoothing : float, default=0.1
    smoothing_form : {"paper", "symmetric"}
    hard_negatives : int or None, default=1000
        m of the hard-negative mining; None uses all negatives.
    phases : list of (int, str, float) or None
        Progressive unfreezing (epoch, group, lr); groups are "head",
        "attention", "encoder", "embeddings" (and "intermediate" for
        pretrained encoders). None: :func:`default_phases`.
    lr : float or None, default=None
        Stage 2 learning rate (AdamW); the phases scale it per group. None:
        :func:`default_lr`, 1e-2 for a word backbone whose Stage 2 keeps the
        Stage 1 loss (``stage1_weight`` > 0), else 1e-3; with
        ``stage1_weight="dev"`` each candidate weight gets its own rate.
    weight_decay : float, default=0.01
    max_epochs : int, default=30
    batch_size : int, default=16
    validation_fraction : float or None, default=0.1
    min_epoch_docs : int or None, default=None
        Training documents drawn per epoch: with fewer training documents,
        each epoch makes several passes over them (each pass shuffled), so a
        small training set gets as many optimizer steps per epoch, and per
        dev evaluation, as this many documents would. None: one pass (the
        usual epoch). ``strategy="skorch"`` only. Also given to the planter.
    max_epoch_docs : int or None, default=None
        Training documents drawn per epoch at most: with more training
        documents, each epoch trains on a fresh random subset of this many
        (and the dev split is scored after it), so a large training set gets
        no more optimizer steps per epoch than this many documents would.
        With ``min_epoch_docs`` equal to it, every training size gets the
        same number of steps (a fixed-compute low-data curve). None: all of
        them. ``strategy="skorch"`` only. Also given to the planter.
    scoring : str, default="map"
        Dev metric for early stopping ("map", "precision_at_k", "ndcg_at_k"),
        and of ``best_epoch_``. MAP, the one used by ``xplant run``,
        ``xplant ablate`` and the benchmarks, because it does not saturate
        with few labels per document (with 1.2 labels per document P@5
        cannot exceed about 0.24).
    patience : int, default=6
        Epochs without a better dev ``scoring`` before training stops (the
        best epoch's weights are kept).
    decision : {"top_k", "threshold"}
        The rule ``predict`` applies; k and the threshold are chosen on dev.
    max_k : int, default=10
    random_state : int, default=0
    n_jobs : int or None
        torch threads.
    shortlist : None, "linear" or estimator, default=None
        A cheap model that ranks every label; cloned and fitted inside
        ``fit`` on the training rows (after ``validation_fraction`` took its
        dev rows). ``"linear"``: TF-IDF + one-vs-rest squared-hinge SVM,
        C chosen on dev. Any unfitted estimator (or Pipeline) taking texts
        with ``predict_top_k``, ``decision_function`` or ``predict_proba``
        serves (e.g. Omikuji's trees). It reads the raw texts (a token
        corpus from ``MIGRelevance.transform`` keeps them). ``"linear"``
        takes the classifier's ``random_state`` and ``n_jobs``; an estimator
        is cloned with its own parameters (set its ``random_state`` for
        repeatable fits). None: today's full-label Stage 2, no fusion.
    n_candidates : int or None, default=100
        C, the labels per document that Stage 2 attends and scores: in
        training the document's gold labels plus the shortlist's
        highest-ranked negatives, at test time the shortlist's top C.
        Tensors are (b, C, ·), never (b, L, ·). None: every label (the
        full-label Stage 2, fused with the shortlist). Larger than L is
        clipped with a warning.
    fusion : "dev" or float, default="dev"
        α of the final score α·σ(a·s + b) + (1 − α)·σ(z), s the shortlist's
        score, z PLANT's logit. "dev" chooses α from {0, 0.1, ..., 1} by
        the dev ``scoring`` metric (recorded every epoch, and chosen once
        more after the best epoch is
        restored, together with the shortlist's calibration: the plain
        sigmoid or the logistic scaling fitted on dev candidates); 0.5 with
        a warning when there is no dev data.
    logit_adjustment : "dev" or float, default=0.0
        τ >= 0 of the post-hoc logit adjustment z − τ · log p_l of PLANT's
        logits (Menon et al., ICLR 2021), p_l the smoothed training prior of
        label l ((f_l + ½) / (N + 1)): τ > 0 lifts rare labels against head
        labels in every score the model gives (probabilities, top-k, fused
        scores, explanations). Training is unchanged; 0 (the default) scores
        with the network as trained. "dev" chooses τ from
        {0, 0.25, 0.5, 0.75, 1} after the best epoch is restored (and after
        α, with a shortlist), by the dev micro-F1 of the top-k rule (k
        chosen with it); ties keep the smaller τ, and without dev data τ is
        0. It needs a large dev split: on EURLEX57K (6,000 dev documents)
        it raised test macro-F1, on CodiEsp-D (250) its choice was noise
        (docs/shortlist.md, "Logit adjustment").
    shortlist_cv : int or None, default=None
        None: training documents are shortlisted by the shortlist fitted on
        them (in-sample, cheap). k >= 2: out-of-fold, each of k folds by a
        clone fitted on the others (XR-Transformer's cross-fitting), so
        training negatives look like test negatives; k more shortlist fits.
    strategy : {"skorch", "deepspeed"}, default="skorch"
        "deepspeed" trains Stage 2 (and a default planter's Stage 1) with
        :func:`xplant.neural.distributed.fit_deepspeed` (ZeRO 0-3, bf16,
        offload, several processes); ``batch_size`` is then the global batch.
    checkpoint_dir : str, Path or None
        Folder where Stage 2 writes a checkpoint after every epoch
        (atomically; safetensors + JSON, see ``docs/reliability.md``);
        ``fit(..., resume=True)`` continues from its latest one. With a
        ``shortlist``, the fitted shortlist goes there too (``shortlist/``),
        so it must be one :meth:`save` can store; another raises TypeError
        once the shortlist is fitted.
    deepspeed_config : dict, str or None
        Overrides of :func:`xplant.neural.distributed.default_deepspeed_config`,
        or a JSON/YAML file of them.

    Attributes
    ----------
    module_ : PlantNet
    relevance_ : MIGRelevance
    planter_ : AttentionPlanter or None
    classes_ : ndarray of shape (n_labels,)
    n_labels_, n_train_documents_ : int
        Labels, and documents Stage 2 trained on (without the dev rows that
        ``validation_fraction`` holds out).
    label_frequency_ : ndarray of int64 of shape (n_labels,)
        Training documents of each label, over the same rows (the order of
        non-candidate labels, and propensities for PSP@k scorers).
    k_ : int
    threshold_ : float
    best_epoch_ : int
    stage1_weight_ : float
        The weight Stage 2 trained with (``stage1_weight``, or the one
        chosen on dev).
    stage1_weight_candidates_ : list of dict or None
        With ``stage1_weight="dev"``: each candidate's ``stage1_weight``,
        best dev score (``dev_map`` by default), ``best_epoch`` and
        ``epochs``. Saved and loaded with the model.
    shortlist_ : estimator or None
        The fitted shortlist.
    fusion_weight_ : float or None
        α (1 = the shortlist alone, 0 = PLANT alone on its candidates).
    shortlist_calibration_ : tuple of float
        (a, b) of σ(a·s + b), chosen on dev with α; (1, 0) is the plain sigmoid.
    logit_adjustment_ : float
        The τ the model scores with (``logit_adjustment``, or the one chosen
        on dev); 0 while it trains.
    logit_adjustment_dev_ : dict of float to float or None
        With ``logit_adjustment="dev"`` and dev data: each τ's dev micro-F1
        (a fraction) at its best k.
    n_candidates_ : int or None

    Examples
    --------
    >>> from xplant.neural import PlantClassifier          # doctest: +SKIP
    >>> clf = PlantClassifier(max_epochs=5).fit(texts, Y)  # doctest: +SKIP
    >>> idx, scores = clf.predict_top_k(new_texts, k=5)     # doctest: +SKIP
    """

    def __init__(self, backbone="cnn", *, plant=True, planter=None, plant_from=None,
                 relevance=None, stage1_target=None, stage1_loss=None, stage1_weight="dev",
                 embedding_dim=100,
                 hidden_dim=128, attention_dim=128, kernel_size=5, dropout=0.2, glove=False,
                 max_length=4096, backbone_options=None, pool_size=128, head="shared", loss="focal", gamma=2.0,
                 label_smoothing=0.1, smoothing_form="paper", hard_negatives=1000, phases=None,
                 lr=None, weight_decay=0.01, max_epochs=30, batch_size=16,
                 validation_fraction=0.1, min_epoch_docs=None, max_epoch_docs=None,
                 scoring="map", patience=6,
                 shortlist=None, n_candidates=100, fusion="dev", shortlist_cv=None,
                 logit_adjustment=0.0, decision="top_k", max_k=10, random_state=0, n_jobs=None,
                 strategy="skorch", deepspeed_config=None, checkpoint_dir=None, module=PlantNet,
                 criterion=PlantLoss,
                 optimizer=torch.optim.AdamW,
                 train_split=None, verbose=1, device="cpu", **kwargs):
        super().__init__(module=module, criterion=criterion, optimizer=optimizer, lr=lr,
                         max_epochs=max_epochs, batch_size=batch_size, train_split=train_split,
                         verbose=verbose, device=device, **kwargs)
        self.backbone = backbone
        self.plant = plant
        self.planter = planter
        self.plant_from = plant_from
        self.relevance = relevance
        self.stage1_target = stage1_target
        self.stage1_loss = stage1_loss
        self.stage1_weight = stage1_weight
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.attention_dim = attention_dim
        self.kernel_size = kernel_size
        self.dropout = dropout
        self.glove = glove
        self.backbone_options = backbone_options
        self.max_length = max_length
        self.pool_size = pool_size
        self.head = head
        self.loss = loss
        self.gamma = gamma
        self.label_smoothing = label_smoothing
        self.smoothing_form = smoothing_form
        self.hard_negatives = hard_negatives
        self.phases = phases
        self.weight_decay = weight_decay
        self.validation_fraction = validation_fraction
        self.min_epoch_docs = min_epoch_docs
        self.max_epoch_docs = max_epoch_docs
        self.scoring = scoring
        self.patience = patience
        self.shortlist = shortlist
        self.n_candidates = n_candidates
        self.fusion = fusion
        self.shortlist_cv = shortlist_cv
        self.logit_adjustment = logit_adjustment
        self.decision = decision
        self.max_k = max_k
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.strategy = strategy
        self.deepspeed_config = deepspeed_config
        self.checkpoint_dir = checkpoint_dir

    collate = Stage2Collate

    # -- skorch ladder -----------------------------------------------------
    @property
    def _default_callbacks(self):
        base = [cb for cb in super()._default_callbacks if cb[0] != "print_log"]
        cbs = base + [("guard", FiniteLossGuard()), ("unfreeze", ProgressiveUnfreezing())]
        if getattr(self, "dev_docs_", None) is not None:   # no dev data: train max_epochs
            cbs += [("dev_score", DevScoring(self.scoring)),
                    ("early_stopping", EarlyStopping(monitor="valid_" + self.scoring,
                                                     lower_is_better=False, patience=self.patience,
                                                     load_best=True, sink=_silent))]
        if self.checkpoint_dir is not None:                 # after early stopping (its state)
            cbs += [("checkpoint", TrainingCheckpoint(self.checkpoint_dir))]
        if self.verbose:
            cbs += [("progress", ProgressBar()), ("print_log", PrintLog())]
        return cbs

    def get_split_datasets(self, X, y=None, **fit_params):
        """No skorch validation pass: with dev data, :class:`DevScoring` makes
        one pass over dev per epoch and records both the dev scores and
        ``valid_loss`` (``FusionMixin._dev_scores``)."""
        return X, None

    def initialize_module(self):
        kwargs = self.get_params_for("module")
        self.module_ = self.module(self.build_encoder(), self.n_labels_, self.attention_dim,
                                   pool_size=self.pool_size, head=self.head, **kwargs)
        return self

    def initialize_criterion(self):
        kwargs = self.get_params_for("criterion")
        self.criterion_ = self.criterion(loss=self.loss, gamma=self.gamma,
                                         label_smoothing=self.label_smoothing,
                                         smoothing_form=self.smoothing_form,
                                         hard_negatives=self.hard_negatives, **kwargs)
        return self

    def initialize_optimizer(self, triggered_directly=None):
        named = dict(self.module_.named_parameters())
        groups = []
        for gname, names in self.module_.parameter_groups().items():
            if names:
                groups.append({"params": [named[n] for n in names], "lr": 0.0,
                               "name": gname, "param_names": names})
        return self.make_optimizer(groups)

    def effective_lr(self):
        """``lr``, or :func:`default_lr` for the Stage 2 weight where ``lr=None``.

        The weight is ``stage1_weight_`` once ``fit`` has resolved it (each
        candidate's, inside ``stage1_weight="dev"``); before that, the fixed
        ``stage1_weight`` or the fallback of ``"dev"``.
        """
        if self.lr is not None:
            return float(self.lr)
        weight = getattr(self, "stage1_weight_", None)
        if weight is None:
            weight = (STAGE1_WEIGHT_FALLBACK if self.stage1_weight == "dev"
                      else float(self.stage1_weight))
        return default_lr(self.backbone, weight)

    def resolve_phases(self):
        """Set ``phases_``: ``phases``, or :func:`default_phases` at :meth:`effective_lr`."""
        self.phases_ = to_python(self.phases if self.phases is not None
                                 else default_phases(self.backbone, self.effective_lr()))
        return self

    # -- fit -------------------------------------------------------------------
    def _check_params(self):
        self.check_shared_params(("pool_size", "patience", "max_k"), lr_none_ok=True)
        check_param("head", self.head, allowed=("shared", "labelwise"))
        check_param("loss", self.loss, allowed=("focal", "bce"))
        check_param("smoothing_form", self.smoothing_form, allowed=("paper", "symmetric"))
        check_param("decision", self.decision, allowed=("top_k", "threshold"))
        check_param("stage1_target", self.stage1_target, allowed=(None, "mig", "tf"))
        check_param("stage1_loss", self.stage1_loss,
                    allowed=(None, "lambda", "lambdarank", "ranknet", "mse"))
        check_param("hard_negatives", self.hard_negatives, kind=numbers.Integral, low=1,
                    none_ok=True)
        check_param("gamma", self.gamma, low=0)
        if isinstance(self.stage1_weight, str):
            check_param("stage1_weight", self.stage1_weight, allowed=("dev",))
        else:
            check_param("stage1_weight", self.stage1_weight, low=0)
        check_param("label_smoothing", self.label_smoothing, low=0, high=0.5)
        check_param("validation_fraction", self.validation_fraction, low=0, high=0.9,
                    low_open=True, none_ok=True)
        if self.phases is not None:
            for ph in self.phases:
                if len(ph) != 3 or ph[0] < 0 or ph[2] < 0:
                    raise ValueError(f"each phase must be (epoch >= 0, group, lr >= 0), got {ph!r}")
        metric_by_name(self.scoring)
        check_shortlist(self.shortlist)
        check_fusion(self.fusion)
        check_logit_adjustment(self.logit_adjustment)
        if self.n_candidates is not None:
            check_n_candidates(self.n_candidates, np.inf)
        check_param("shortlist_cv", self.shortlist_cv, kind=numbers.Integral, low=2,
                    none_ok=True)

    def fit(self, X, Y, validation_data=None, *, resume=False, label_names=None,
            label_descriptions=None, label_synonyms=None, label_parents=None):
        """Fit Stage 1 (unless disabled) and Stage 2.

        Parameters
        ----------
        X : token corpus from MIGRelevance.transform, or list of str, length n
        Y : {array-like, sparse matrix} of shape (n, n_labels), 1-D binary y, or label lists
            Read by :func:`xplant._labels.check_targets` (a rectangular 0/1
            array-like is a matrix; sets or rows of strings are label lists).
        validation_data : tuple (X_dev, Y_dev) or None
            The official dev split (raw texts or a token corpus of the same
            MIGRelevance); else a seeded ``validation_fraction`` split of X.
        resume : bool, default=False
            Continue from the latest checkpoint in ``checkpoint_dir`` (same
            weights, optimizer state, history, unfreezing schedule, early
            stopping state and RNG states), skipping Stage 1 when the
            checkpoint exists; with no checkpoint there yet, train from the
            start. Give the same data and parameters as the interrupted fit.
            After a resumed fit ``planter_`` is None (Stage 1 ran in the
            interrupted process).
        label_names : array-like of shape (n_labels,) or None
            The label names (codes) of Y's columns, or the label space of
            label lists; stored as ``classes_``, saved with the model and
            used by ``explain`` and ``xplant predict``. None: the sorted
            labels of label lists, else ``0..n_labels-1``.
        label_descriptions, label_synonyms, label_parents : sequences of length n_labels, optional
            Passed to the planter's ``fit`` (with ``label_names``): labels
            with no training document are planted on their descriptions'
            corpus tokens, and a label without targets borrows its
            relatives' query (:class:`AttentionPlanter`). None: the plain
            planting.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Invalid parameters, misaligned X/Y, non-binary Y, no positive
            label at all, or a token corpus from another tokenizer;
            ``resume=True`` without ``checkpoint_dir`` or with a checkpoint of
            other data.
        FloatingPointError
            A NaN or inf training loss (the last epoch's checkpoint is kept).

        Warns
        -----
        DegenerateModelWarning
            After an epoch whose dev predictions (probability > 0.5) cover
            more than half of the labels per document, or reach recall >= 0.99
            at precision < 0.01; ``history`` records
            ``valid_mean_predicted_labels`` every epoch.
        """
        data = self._prepare_fit(X, Y, validation_data, resume=resume, label_names=label_names)
        Y, docs, tr, dv = data.Y, data.docs, data.tr, data.dv
        train_docs, train_pos, dev_docs, Yd = data.train_docs, data.train_pos, data.dev_docs, data.Y_dev
        # the rows Stage 2 trains on: validation_fraction's dev rows are not counted
        self.label_frequency_ = label_frequency(Y[tr])
        self.n_train_documents_ = len(tr)
        self.dev_docs_, self.dev_Y_ = dev_docs, Yd
        self.dev_dataset_ = None if dev_docs is None else TokenDataset(dev_docs, data.dev_pos)
        self.stage1_weight_ = None      # resolved below; the rate of lr=None follows it
        self.logit_adjustment_, self.logit_adjustment_dev_ = 0.0, None   # chosen after training
        self.n_fit_train_ = len(train_docs)
        self.n_candidates_ = (None if self.shortlist is None
                              else check_n_candidates(self.n_candidates, self.n_labels_))
        self.initialize()
        self._init_label_bias(Y[tr])
        cands = self._fit_shortlist(X, docs, tr, dv, validation_data, dev_docs, Y, Yd,
                                    resume=resume)
        self.planter_ = None
        from ._dev_choice import resolve_stage1_weight
        weight = resolve_stage1_weight(self.stage1_weight, dev_Y=Yd if dev_docs is not None
                                       else None, strategy=self.strategy)
        on_dev = weight == "dev"
        self.stage1_weight_ = 0.0 if on_dev else weight
        self.stage1_weight_candidates_ = None
        self.resolve_phases()           # fit_stage2_on_dev resolves them per candidate
        ckpt = read_checkpoint(self.checkpoint_dir) if resume else None
        if ckpt is not None:           # Stage 1 ran before the first checkpoint: not again
            restore_checkpoint(self, ckpt)
        elif self.plant:
            described = {k: v for k, v in (("label_descriptions", label_descriptions),
                         ("label_synonyms", label_synonyms), ("label_parents", label_parents)) if v is not None}
            self._plant(train_docs, Y[tr], dev_docs, Yd, resume=resume, described=described)

        def dataset():
            return self._train_dataset(train_docs, train_pos, Y[tr], cands)

        def fit_on_dev(make_dataset):    # Stage 2 per candidate weight, from the planted state
            from ._dev_choice import fit_stage2_on_dev
            self.stage1_weight_candidates_ = fit_stage2_on_dev(self, make_dataset, resume=resume)

        self._train(dataset, ckpt, fit=fit_on_dev if on_dev else None)
        self.best_epoch_ = self._best_epoch()
        self._choose_decision(Y[tr], self._choose_scoring())
        return self

    def infer(self, x, **fit_params):
        if isinstance(x, dict) and ("rank" in x or "candidates" in x):
            return self.module_(**{k: v.to(self.device) for k, v in x.items()})
        return super().infer(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """Stage 2 loss; plus ``stage1_weight`` × the ranking loss on anchored batches."""
        if isinstance(y_true, dict):                  # shortlist candidates
            logits, s = y_pred if isinstance(y_pred, tuple) else (y_pred, None)
            y = {k: v.to(self.device) for k, v in y_true.items()}
            loss = self.criterion_(logits, {"target": y["target"], "keep": y["keep"]})
            if s is not None:
                loss = loss + self.stage1_weight_ * stage1_loss(s, y["rel"], y["valid"],
                                                               **self.stage1_loss_params_)
            return loss
        if not isinstance(y_pred, tuple):
            return super().get_loss(y_pred, y_true, X=X, training=training)
        logits, s = y_pred
        pos, rel, valid = (t.to(self.device) for t in y_true)
        rank = stage1_loss(s, rel, valid, **self.stage1_loss_params_)
        return self.criterion_(logits, pos) + self.stage1_weight_ * rank

    @torch.no_grad()
    def _init_label_bias(self, Y_train):
        """Start each label's bias at the log-odds of its mean training target.

        The mean target of label l is its smoothed prior: with frequency
        p_l = (f_l + ½) / (N + 1) and label smoothing ε, (1 − ε) p_l + ε (1 − p_l)
        ("paper") or (1 − ε) p_l + ε / 2 ("symmetric"). The network then
        starts at the constant that minimises its own loss for each label,
        rather than at 0.5, and a label never selected by hard-negative
        mining (no training positive) keeps a low, finite score.
        """
        p = label_prior(label_frequency(Y_train), Y_train.shape[0])
        eps = float(self.label_smoothing or 0.0)
        if eps:
            p = (1 - eps) * p + (eps * (1 - p) if self.smoothing_form == "paper" else eps / 2)
        prior = np.log(p / (1 - p))
        self.module_.label_bias.copy_(torch.as_tensor(prior, dtype=self.module_.label_bias.dtype))

    def _best_epoch(self):
        key = "valid_" + self.scoring
        vals = [h.get(key) for h in self.history]
        if not vals or vals[0] is None:
            return len(self.history)
        return int(np.nanargmax(np.asarray(vals, dtype=float))) + 1

    def _choose_decision(self, Y_train, dev_scores=None):
        from .. import metrics
        if self.dev_docs_ is not None and self.dev_Y_.nnz:
            scores = dev_scores if dev_scores is not None else self._scores(self.dev_docs_)
            self.k_ = int(metrics.select_k(self.dev_Y_, scores, ks=range(1, self.max_k + 1)))
            self.threshold_ = float(metrics.select_threshold(self.dev_Y_, scores))
        else:
            self.k_ = int(max(1, round(Y_train.nnz / max(1, Y_train.shape[0]))))
            self.threshold_ = 0.5

    # -- persistence -------------------------------------------------------------
    def save(self, path, *, overwrite=False):
        """Save to a folder: safetensors weights + JSON config + the MIGRelevance.

        See :func:`xplant.neural.save_model`. Loading runs no pickled code.
        """
        from ._io import save_model
        return save_model(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path):
        """Load a model saved by :meth:`save` (see :func:`xplant.neural.load_model`)."""
        from ._io import load_model
        return load_model(path)
