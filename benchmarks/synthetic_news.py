"""A seeded synthetic corpus of a newswire shape, written as ``xplant run`` JSON lines.

    python benchmarks/synthetic_news.py OUT_DIR [--train 7700] [--dev 1000] [--test 1000]
        [--labels 90] [--words 130] [--seed 0] [--topic-share 0.3] [--shared-words 20]
        [--extra-label 0.2] [--stray-share 0] [--label-noise 0]

writes ``OUT_DIR/train.jsonl``, ``dev.jsonl`` and ``test.jsonl`` (one
``{"id": ..., "text": ..., "labels": [...]}`` per line), the files
``xplant run --train/--dev/--test`` and ``benchmarks/bench_speed.py
--train/--dev/--test`` read. The default shape is that of the user's corpus
this benchmark stands in for (a public newswire corpus, never tuned on):
about 7,700 training documents of about 130 words, 90 labels, 1.2
labels per document.

How a document is drawn (every draw from one ``numpy`` generator seeded
with ``--seed``):

- its labels: a first label from a Zipf law over the labels (exponent
  1.1; the most frequent label has about a third of the documents, as a
  newswire's "earnings"), then each further label with probability 0.2,
  from the same law and, half of the time, from the first label's group
  of 6 related labels;
- its length: log-normal around ``--words`` (σ 0.6), at least 10 words;
- each word: with probability 0.7 a background word (a Zipf law, exponent
  1.05, over a 20,000-word vocabulary), else a topic word of one of its
  labels. Each label has 40 topic words (a Zipf law over them, exponent
  0.8), 20 of them shared with the other labels of its group, so related
  labels are told apart by their own words only. With ``--stray-share``
  that share of the words (taken from the background's share) are topic
  words of any label (drawn from the labels' Zipf law), whether the
  document has it or not;
- with ``--label-noise``, each of its labels is recorded, with that
  probability, as another label (the labels' Zipf law), after its words
  were drawn.

The defaults give an easy corpus (dev MAP above 90) on which PLANT's kept
ranking loss (``stage1_weight=0.1``) is clearly ahead on dev of both its
weight 0 and ``plant=False``. The user's corpora were not like that: there
PLANT scored within half a point of ``plant=False``. A flatter corpus,
closer to them, is::

    python benchmarks/synthetic_news.py OUT_DIR --topic-share 0.25 \
        --stray-share 0.1 --label-noise 0.15

On it the kept ranking loss is far behind weight 0 on dev, and PLANT is
ahead of ``plant=False`` by less than on the defaults, though still by more
than on the user's corpora (the figures: docs/benchmarks/speed.md, "A
user's corpus of many short documents").

The defaults stay those of the first corpus, so that its measurements can
be rerun; the options draw nothing more at their defaults.

The words are made-up syllable strings (``"kotaru"``), the same for one
seed whatever the sizes, so every split shares one vocabulary.
"""

import argparse
import json
from pathlib import Path

import numpy as np

#: The default shape: training, dev and test documents, labels, mean words per document.
SHAPE = {"train": 7700, "dev": 1000, "test": 1000, "labels": 90, "words": 130}

#: How the words and labels mix (keywords of :func:`synthetic_news`), their defaults.
MIX = {"topic_share": 0.3, "shared_words": 20, "extra_label": 0.2, "stray_share": 0.0,
       "label_noise": 0.0}

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _zipf(n, a):
    p = 1.0 / np.arange(1, n + 1) ** a
    return p / p.sum()


def _words(n, rng):
    """``n`` distinct made-up words of 2 to 4 syllables."""
    out, seen = [], set()
    while len(out) < n:
        k = rng.integers(2, 5)
        w = "".join(_CONSONANTS[rng.integers(len(_CONSONANTS))] + _VOWELS[rng.integers(len(_VOWELS))]
                    for _ in range(k))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def synthetic_news(n_docs, *, n_labels=90, words=130, vocabulary=20000, topic_words=40,
                   shared_words=20, group_size=6, topic_share=0.3, extra_label=0.2,
                   stray_share=0.0, label_noise=0.0, seed=0, split_seed=None):
    """Documents and label lists of the synthetic newswire shape (see the module docstring).

    Parameters
    ----------
    n_docs : int
        Documents to draw.
    n_labels, words, vocabulary, topic_words, shared_words, group_size : int
        Labels, mean words per document, background vocabulary, topic words
        per label, how many of them its group shares, labels per group.
    topic_share : float
        Share of a document's words drawn from its labels' topics.
    extra_label : float
        Probability of each further label (geometric: 1.25 labels per
        document on average at 0.2).
    stray_share : float
        Share of a document's words drawn from the topic of a label it does
        not necessarily have (one label per word, from the Zipf law of the
        labels): topic words that stray across labels, as a newswire's
        "profit" or "shares" do.
    label_noise : float
        Probability of each of a document's labels being recorded as another
        label (from the Zipf law of the labels) after its words were drawn:
        annotation noise, which caps what any model can score.
    seed : int
        Seeds the vocabulary and the topics (one seed, one corpus).
    split_seed : int or None
        Seeds the documents (each split its own); None: ``seed``.

    Returns
    -------
    texts : list of str
    labels : list of list of str
        Label names ``"L00"`` .. ``"L89"``.
    """
    rng = np.random.default_rng(seed)
    vocab = _words(vocabulary + n_labels * topic_words, rng)
    background, topical = vocab[:vocabulary], vocab[vocabulary:]
    n_groups = -(-n_labels // group_size)
    group_of = rng.permutation(np.arange(n_labels) % n_groups)
    shared = [rng.choice(len(topical), shared_words, replace=False) for _ in range(n_groups)]
    topics = []
    for label in range(n_labels):
        own = rng.choice(len(topical), topic_words - shared_words, replace=False)
        # a label's strongest words are its own; the group's come after them
        topics.append(np.concatenate([own, shared[group_of[label]]]))
    p_background, p_topic, p_label = _zipf(vocabulary, 1.05), _zipf(topic_words, 0.8), _zipf(n_labels, 1.1)
    names = [f"L{i:02d}" for i in range(n_labels)]

    rng = np.random.default_rng(seed if split_seed is None else split_seed)
    texts, labels = [], []
    for _ in range(n_docs):
        first = int(rng.choice(n_labels, p=p_label))
        mine = [first]
        while rng.random() < extra_label and len(mine) < n_labels:
            if rng.random() < 0.5:
                group = np.flatnonzero(group_of == group_of[first])
                nxt = int(rng.choice(group))
            else:
                nxt = int(rng.choice(n_labels, p=p_label))
            if nxt not in mine:
                mine.append(nxt)
        n = max(10, int(rng.lognormal(np.log(words) - 0.18, 0.6)))
        u = rng.random(n)
        from_topic = u < topic_share
        which = rng.integers(len(mine), size=n)
        bg = rng.choice(vocabulary, size=n, p=p_background)
        tw = rng.choice(topic_words, size=n, p=p_topic)
        # a word's label: one of the document's, or (stray) any label; no extra
        # draws at the defaults, so their corpus is the same as before the options
        owner = [mine[w] for w in which]
        if stray_share > 0:
            stray = (u >= topic_share) & (u < topic_share + stray_share)
            other = rng.choice(n_labels, size=n, p=p_label)
            from_topic = from_topic | stray
            owner = [int(o) if s else m for m, o, s in zip(owner, other, stray)]
        doc = [topical[topics[o][t]] if f else background[b]
               for f, o, t, b in zip(from_topic, owner, tw, bg)]
        texts.append(" ".join(doc))
        if label_noise > 0:
            swap = rng.random(len(mine)) < label_noise
            repl = rng.choice(n_labels, size=len(mine), p=p_label)
            mine = list(dict.fromkeys(int(r) if s else m for m, r, s in zip(mine, repl, swap)))
        labels.append(sorted(names[m] for m in mine))
    return texts, labels


def write_corpus(out_dir, *, train=SHAPE["train"], dev=SHAPE["dev"], test=SHAPE["test"],
                 labels=SHAPE["labels"], words=SHAPE["words"], seed=0, **mix):
    """Write ``train.jsonl``, ``dev.jsonl`` and ``test.jsonl`` to ``out_dir``; their paths.

    ``mix``: :data:`MIX`'s keywords of :func:`synthetic_news` (``topic_share`` ...).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, (split, n) in enumerate((("train", train), ("dev", dev), ("test", test))):
        texts, labs = synthetic_news(n, n_labels=labels, words=words, seed=seed,
                                     split_seed=seed * 10 + i + 1, **mix)
        paths[split] = out / f"{split}.jsonl"
        with open(paths[split], "w", encoding="utf-8") as fh:
            for j, (t, l) in enumerate(zip(texts, labs)):
                fh.write(json.dumps({"id": f"{split}-{j}", "text": t, "labels": l}) + "\n")
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    for k, v in SHAPE.items():
        ap.add_argument(f"--{k}", type=int, default=v)
    for k, v in MIX.items():
        ap.add_argument(f"--{k.replace('_', '-')}", type=type(v), default=v)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    paths = write_corpus(args.out_dir, **{k: getattr(args, k) for k in SHAPE}, seed=args.seed,
                         **{k: getattr(args, k) for k in MIX})
    for split, p in paths.items():
        print(split, p)


if __name__ == "__main__":
    main()
