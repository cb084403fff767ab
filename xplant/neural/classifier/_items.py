"""Stage 2's items and their batches: documents with labels, candidates, ranking items.

:class:`Stage2Collate` batches the items of a :class:`~xplant.neural.batching.TokenDataset`
(documents and their positive labels), an :class:`AnchoredDataset` (plus
Stage 1 ranking items of the same document, for ``stage1_weight`` > 0) or a
:class:`CandidateDataset` (over each document's shortlist candidates).
"""

import numpy as np
import torch
from torch.utils.data import Dataset

from ..planting._items import Stage1Collate
from ..training._data import pad_batch


class Stage2Collate:
    """Collate ``(ids, positives)`` items into model inputs and targets.

    Returns ``({"ids": (b, n) long, "mask": (b, n) bool}, pos)`` where
    ``pos`` is a (b, max_pos) long tensor of positive label ids padded with
    -1 (or None when unlabelled). Items of an :class:`AnchoredDataset` add
    ``"rank"`` (a :class:`Stage1Batch`) to the inputs and give
    ``(pos, relevance, valid)`` as targets. Items of a
    :class:`CandidateDataset` add ``"candidates"`` (b, C) to the inputs and
    give ``{"target", "keep"}`` (b, C) (plus ``"rel"``, ``"valid"`` when
    anchored) as targets.

    Parameters
    ----------
    pad_id : int or None
        The token id that pads the documents (the relevance's ``pad_id_``).
    """

    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, items):
        if len(items[0]) == 4:        # CandidateDataset: shortlist candidates
            return self._candidates(items)
        if len(items[0]) == 3:        # AnchoredDataset: Stage 1 ranking items too
            rank, (rel, valid) = Stage1Collate(self.pad_id)([(it[0], it[2]) for it in items])
            pos, _ = pad_batch([it[1] for it in items], pad_value=-1, min_len=1)
            return {"ids": rank.ids, "mask": rank.mask, "rank": rank}, (pos, rel, valid)
        ids, mask = pad_batch([it[0] for it in items], pad_value=self.pad_id)
        if items[0][1] is None:
            return {"ids": ids, "mask": mask}, None
        pos, _ = pad_batch([it[1] for it in items], pad_value=-1, min_len=1)
        return {"ids": ids, "mask": mask}, pos

    def _candidates(self, items):
        cand, _ = pad_batch([it[2] for it in items], pad_value=-1, min_len=1)
        target, _ = pad_batch([it[3] for it in items], pad_value=0, min_len=1, dtype=torch.float)
        keep = cand >= 0
        y = {"target": target, "keep": keep}
        if items[0][1] is not None:
            rank, (rel, valid) = Stage1Collate(self.pad_id)([(it[0], it[1]) for it in items])
            y.update(rel=rel, valid=valid)
            x = {"ids": rank.ids, "mask": rank.mask, "rank": rank}
        else:
            ids, mask = pad_batch([it[0] for it in items], pad_value=self.pad_id)
            x = {"ids": ids, "mask": mask}
        x["candidates"] = cand.clamp(min=0)
        return x, y


class CandidateDataset(Dataset):
    """Stage 2 items over each document's shortlist candidates.

    Each item is ``(ids, ranking_items or None, candidates, target)``:
    the candidates (label ids, gold first) and their 0/1 targets, plus the
    Stage 1 ranking items of the same document when ``ranking`` is given
    (``stage1_weight`` > 0). The collate makes ``x["candidates"]`` (b, C)
    and ``y = {"target", "keep"}`` (b, C), never (b, L).

    Parameters
    ----------
    docs : list of ndarray of int64
    positives : list of ndarray of int64
    candidates : list of ndarray of int64
        Per document, from :func:`xplant.fusion.training_candidates`.
    ranking : Stage1Dataset or None
    """

    def __init__(self, docs, positives, candidates, ranking=None):
        if not len(docs) == len(positives) == len(candidates):
            raise ValueError(f"{len(docs)} documents, {len(positives)} label rows and "
                             f"{len(candidates)} candidate rows; they must align")
        self.docs, self.candidates, self.ranking = docs, candidates, ranking
        self.targets = [np.isin(c, p).astype(np.float32) for c, p in zip(candidates, positives)]

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        rank = None if self.ranking is None else self.ranking.sample(i)
        return self.docs[i], rank, self.candidates[i], self.targets[i]

    def lengths(self):
        return np.array([len(d) for d in self.docs], dtype=np.int64)


class AnchoredDataset(Dataset):
    """Stage 2 items plus Stage 1 ranking items of the same document.

    For ``PlantClassifier(stage1_weight > 0)``: each item is ``(ids,
    positives, ranking_items)`` with the ranking items sampled by a
    :class:`Stage1Dataset` over the same documents, so that Stage 2 can keep
    the planting loss on the attention while the classifier trains.

    Parameters
    ----------
    tokens : TokenDataset
        Documents and positive labels.
    ranking : Stage1Dataset
        Over the same documents in the same order.
    """

    def __init__(self, tokens, ranking):
        if len(tokens) != len(ranking):
            raise ValueError(f"tokens has {len(tokens)} documents, ranking {len(ranking)}")
        self.tokens, self.ranking = tokens, ranking

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        doc, pos = self.tokens[i]
        return doc, pos, self.ranking.sample(i)

    def lengths(self):
        return self.tokens.lengths()
