"""The Stage 1 → Stage 2 hand-off: PlantClassifier runs its planter and starts from it.

Stage 1 itself (:class:`AttentionPlanter`) is ``planting/_planter.py``; Stage 2
(:class:`PlantClassifier`) is ``classifier/_classifier.py``. A mixin of :class:`~xplant.neural.PlantClassifier`: ``_plant`` fits an
:class:`AttentionPlanter` (or loads a saved planting) and copies its
encoder and label attention into the Stage 2 network; ``_train_dataset``
builds the Stage 2 items, with the planter's ranking items when
``stage1_weight`` > 0 (docs/guide/classifier.md) and with shortlist
candidates when there is a shortlist (docs/guide/shortlist-fusion.md).
"""

import os

from sklearn.base import clone

from .._settings import ARCH_DEFAULTS, epoch_settings
from ._items import AnchoredDataset, CandidateDataset
from ..planting._items import Stage1Dataset
from ..training._data import TokenDataset
from ..planting._planter import AttentionPlanter, load_planting, tf_relevance


class PlantingMixin:
    """Stage 1 inside :class:`PlantClassifier`'s fit."""

    def _planting_folder(self):
        """The folder of a saved planting given as ``planter``, or None."""
        return os.fspath(self.planter) if isinstance(self.planter, (str, os.PathLike)) else None

    def _plants_from_texts(self, described):
        """Whether Stage 1 plants labels from their texts or ancestors (then every
        label is scored, :func:`~xplant.neural.scored_labels`).

        ``described``: ``fit`` got label descriptions, synonyms or parents. A
        saved planting says so in its ``planting.json``; one saved before it
        said is taken to have planted them (every label scored, as then).
        """
        if not self.plant:
            return False
        folder = self._planting_folder()
        if folder is None:
            return bool(described)
        from pathlib import Path

        from ..._files import read_json_object
        meta = Path(folder) / "planting.json"
        try:
            return bool(read_json_object(meta, "a planting's record").get("planted_from_texts", True))
        except (OSError, ValueError):
            return True            # load_planting reports the broken folder when it plants

    def _stage1_settings(self):
        """The planter whose loss, cutoff and sampling ``stage1_weight`` keeps."""
        if self.planter_ is not None:
            return self.planter_
        return self.planter if isinstance(self.planter, AttentionPlanter) else AttentionPlanter()

    def _train_dataset(self, train_docs, train_pos, Y_train, candidates=None, evidence=None):
        """Stage 2 training items; with ``stage1_weight`` > 0 also ranking items.

        With shortlist ``candidates`` (one label-id array per document),
        each item holds the document's candidates and their targets. The
        ranking items take the rows' gold ``evidence`` targets as Stage 1 did.
        """
        if not self.stage1_weight_:
            if candidates is not None:
                return CandidateDataset(train_docs, train_pos, candidates)
            return TokenDataset(train_docs, train_pos)
        planter = self._stage1_settings()
        # the ranking loss of every anchored batch (not looked up per batch)
        self.stage1_loss_params_ = planter._criterion_defaults()
        rel = self.relevance_
        special = {i for i in (rel.pad_id_, rel.unk_id_) if i is not None and i >= 0}
        target = getattr(planter, "target_relevance_", None)
        if target is None:         # a saved planting, plant=False, or a resumed fit
            if planter.target == "tf" and self._planting_folder() is None:
                target = tf_relevance(train_docs, Y_train, len(rel.vocabulary_),
                                      getattr(rel, "top_k", None) or 50, special)
            else:
                target = rel.relevance_
        ranking = Stage1Dataset(train_docs, train_pos, target,
                                labels_per_doc=planter.labels_per_doc,
                                max_relevant=planter.max_relevant,
                                n_negatives=planter.n_negatives, generator=self.rng_,
                                ignore_ids=special, evidence=evidence)
        if candidates is not None:
            return CandidateDataset(train_docs, train_pos, candidates, ranking)
        return AnchoredDataset(TokenDataset(train_docs, train_pos), ranking)

    def _constructor_planter_params(self, planter):
        """``planter__*`` settings given to the classifier's constructor (skorch keeps
        them as attributes): they reach the planter, as ``set_params`` would.

        Raises
        ------
        ValueError
            When the planter object sets the same parameter to another
            non-default value: one setting, two spellings; the message names both.
        """
        given = self.get_params_for("planter")
        if not given:
            return {}
        own, default = planter.get_params(), AttentionPlanter().get_params()
        for key, value in given.items():
            if key in own and own[key] is not value and own[key] != default.get(key) \
                    and own[key] != value:
                raise ValueError(f"planter__{key}={value!r} and planter=AttentionPlanter("
                                 f"{key}={own[key]!r}) set one setting twice; give one of them")
        return given

    def _planter_overrides(self, planter):
        """What the classifier sets on its planter: its architecture, seed, epoch
        sampling, checkpoint folder and scale-out strategy.

        Raises
        ------
        ValueError
            When the planter sets its own architecture (``module__*`` or
            ``backbone``) to another value than the classifier's: the planting
            loads into the classifier's network, so the classifier's spelling
            is the one to set.
        """
        own = {"backbone": self.backbone, **{k: v for k, v in self._module_settings().items()
                                             if k in ARCH_DEFAULTS}}
        theirs = {"backbone": planter.backbone, **planter.get_params_for("module")}
        for key, value in theirs.items():
            if key == "backbone" and value == "cnn" or key not in own or value == own[key]:
                continue
            spelling = key if key == "backbone" else "module__" + key
            raise ValueError(f"planter=AttentionPlanter({spelling}={value!r}) differs from the "
                             f"classifier's {spelling}={own[key]!r}: the planting loads into "
                             f"the classifier's network, so its architecture is the "
                             f"classifier's. Set PlantClassifier({spelling}={value!r}) and "
                             f"leave the planter's unset")
        over = {"backbone": self.backbone, **{"module__" + k: v for k, v in own.items()
                                              if k != "backbone"}}
        over["random_state"] = self.random_state
        # the classifier's documents per epoch, where it sets them (else the planter's own)
        over.update({"iterator_train__" + k: v for k, v in epoch_settings(self).items()
                     if v is not None})
        if self.checkpoint_dir is not None:
            over["checkpoint_dir"] = os.path.join(self.checkpoint_dir, "stage1")
        if self._uses_deepspeed() and planter.strategy == "skorch":
            over["strategy"] = self.strategy
        return over

    def _plant(self, train_docs, Y_train, dev_docs, Y_dev, resume=False, described=None,
               evidence=None):
        folder = self._planting_folder()
        if folder is not None:
            state, meta = load_planting(folder)
            if meta["n_labels"] != self.n_labels_:
                raise ValueError(f"the planting at {folder} has {meta['n_labels']} labels, "
                                 f"the data {self.n_labels_}")
            fp = getattr(self.relevance_, "tokenizer_fingerprint_", None)
            if meta.get("tokenizer_fingerprint") != fp:
                raise ValueError(f"the planting at {folder} was made with another tokenizer "
                                 "or vocabulary; plant again on this data")
        else:
            planter = clone(self.planter) if self.planter is not None else AttentionPlanter()
            planter.set_params(**self._constructor_planter_params(planter))
            over = self._planter_overrides(planter)
            planter.set_params(**over)
            # the classifier's checked rows and encoded documents, not a second check
            resume = resume and not planter._uses_deepspeed()
            planter._start_fit(resume)
            planter.classes_, planter.relevance_ = self.classes_, self.relevance_
            data = planter._split_fit_data(Y_train, train_docs, dev_docs, Y_dev, evidence)
            planter.evidence_record_ = self.evidence_record_
            planter._fit_prepared(data, resume=resume, **(described or {}))
            self.planter_ = planter
            state = planter.module_.state_dict()
        own = self.module_.state_dict()
        shared = {k: v for k, v in state.items()
                  if (k.startswith("encoder.") or k.startswith("attention.")) and k in own}
        missing = [k for k in own if k.startswith("attention.") and k not in shared]
        if missing:
            raise ValueError(f"the planting lacks {missing}; its architecture differs from this classifier")
        self.module_.load_state_dict(shared, strict=False)
