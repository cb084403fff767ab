"""Memory of one very long document: the model reads ``max_length`` tokens, and pays for those.

A tiny word-backbone PlantClassifier (``max_length=4096``) is fitted on
synthetic texts and saved. Then, each in a fresh child process (so that peak
RSS belongs to one call), one document of ``--words`` words is built and
the process peak RSS is read (Linux ``VmHWM``) before and after:

- ``predict_proba``, ``explain`` (what ``xplant predict`` runs), which now
  tokenize only up to ``max_length``;
- ``tokenize whole``, ``tokenize whole + offsets``: the whole-document
  tokenization that ``predict_proba`` and ``explain`` ran before (the cost
  the limit removes).

It prints, side by side, the added peak RSS for a document of ``max_length``
words and one of ``--words`` words.

Run: ``python benchmarks/bench_long_document.py [--words 2000000]``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys
import numpy as np
from xplant.neural import load_model

def hwm():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0

clf = load_model(sys.argv[1])
call, words = sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(0)
vocab = np.array([f"w{i}" for i in range(40)] + [f"sig{i}" for i in range(8)])
block = min(words, 4096)            # repeat one block: building the text raises no peak
doc = (" ".join(vocab[rng.integers(0, len(vocab), size=block)].tolist()) + " ") * (words // block)
clf.predict_proba(["warm up sig1"]); clf.explain(["warm up sig1"])
before = hwm()
if call == "predict_proba":
    clf.predict_proba([doc])
elif call == "explain":
    clf.explain([doc], top_labels=5)
elif call == "tokenize whole":
    clf.relevance_.tokenize([doc])
else:
    clf.relevance_.tokenize([doc], return_offsets=True)
print(json.dumps({"added_mb": hwm() - before}))
"""


def fit_and_save(folder):
    import numpy as np
    from xplant.neural import AttentionPlanter, PlantClassifier
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for _ in range(80):
        labs = sorted(set(rng.integers(0, 8, size=2).tolist()))
        words = [f"w{i}" for i in rng.integers(0, 40, size=30)] + [f"sig{l}" for l in labs]
        texts.append(" ".join(words))
        labels.append([f"L{l}" for l in labs])
    clf = PlantClassifier(module__embedding_dim=16, module__hidden_dim=16,
                          module__attention_dim=16, module__pool_size=16,
                          batch_size=16, max_epochs=1, verbose=0, module__max_length=4096,
                          stage1_weight=0.1,
                          planter=AttentionPlanter(max_epochs=1, verbose=0))
    clf.fit(texts, labels)
    clf.save(folder)
    return clf.module__max_length


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=2_000_000)
    args = ap.parse_args()
    folder = os.path.join(tempfile.mkdtemp(), "model")
    max_length = fit_and_save(folder)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print(f"| call | added peak RSS, {max_length:,} words (MB) | added peak RSS, "
          f"{args.words:,} words (MB) |")
    print("|---|---:|---:|")
    for call in ("predict_proba", "explain", "tokenize whole", "tokenize whole + offsets"):
        row = []
        for words in (max_length, args.words):
            out = subprocess.run([sys.executable, "-c", CHILD, folder, call, str(words)], env=env,
                                 capture_output=True, text=True, check=True)
            row.append(json.loads(out.stdout.strip().splitlines()[-1])["added_mb"])
        print(f"| {call} | {row[0]:.0f} | {row[1]:.0f} |")


if __name__ == "__main__":
    main()
