"""Render a run folder into one self-contained HTML page plus PNG plots."""

import base64
import json
import math
from pathlib import Path

from ._buckets import f1_by_frequency
from ._highlight import N_COLOURS, highlight_html
from ._zero_shot import zero_shot_sections
from ._io import (
    EVIDENCE_FILE,
    PER_LABEL_FILE,
    RESULTS_FILE,
    SIMILARITY_FILE,
    load_per_label,
    read_evidence,
    read_results,
    read_similarity,
)

REPORT_FILE = "report.html"
F1_PLOT = "f1_by_frequency.png"
SIMILARITY_PLOT = "similarity.png"
DEFAULT_EXAMPLES = 3
#: Columns of the compact results table, in order: (metric key, header).
HEADLINE = (("P@1", "P@1"), ("P@5", "P@5"), ("nDCG@5", "nDCG@5"), ("MAP", "MAP"),
            ("micro_F1", "micro-F1"), ("macro_F1", "macro-F1"), ("F1_few", "F1 few"))
PAPER_SIMILARITY = {"random": 0.75, "planted": 0.985}
_COLOURS = ["#ffe08a", "#9fe3b4", "#a8d0ff", "#ffb3c7", "#d6bcff", "#ffc999"]

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>xplant report: {{ results.dataset }} {{ results.split }}</title>
<style>
body { font-family: sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.doc { white-space: pre-wrap; font-family: serif; line-height: 1.5; border: 1px solid #ddd; padding: 0.8em; }
.gold { text-decoration: underline; text-decoration-thickness: 2px; }
{% for c in colours %}mark.c{{ loop.index0 }} { background: {{ c }}; }
{% endfor %}
img { max-width: 100%; }
.meta { color: #666; font-size: 0.85em; }
.warn { background: #fff3cd; padding: 0.4em 0.6em; }
.wide { overflow-x: auto; }
tr.hit td:nth-child(2) { color: #0a0; font-weight: bold; }
td:nth-child(3) { text-align: left; }
</style>
</head>
<body>
<h1>xplant report</h1>
<p class="meta">Dataset <b>{{ results.dataset }}</b>, split <b>{{ results.split }}</b>{% if results.created %}, created {{ results.created }}{% endif %}.
{% if versions %}Versions: {% for k, v in versions %}{{ k }} {{ v }}{% if not loop.last %}, {% endif %}{% endfor %}.{% endif %}</p>

<h2>Results</h2>
{% if optimistic %}<p class="warn"><b>Optimistic:</b> {{ optimistic }}</p>{% endif %}
<p>Percent{% if split %}, {{ split }} split{% endif %}. F1 uses each row's decision rule (column rule): top-k, a global threshold or per-label thresholds, chosen on dev by cross-fitted micro-F1.</p>
<table id="results">
<thead><tr><th>model</th>{% for h in headline_names %}<th>{{ h }}</th>{% endfor %}<th>fit s</th></tr></thead>
<tbody>
{% for row in rows %}<tr><td>{{ row.name }}</td>{% for v in row.headline %}<td>{{ v }}</td>{% endfor %}<td>{{ row.fit_seconds }}</td></tr>
{% endfor %}</tbody>
</table>
<details><summary>All metrics ({{ metric_names|length }} columns, percent), decision rules, time and memory</summary>
<div class="wide"><table id="results-all">
<thead><tr><th>model</th>{% for m in metric_names %}<th>{{ m }}</th>{% endfor %}<th>rule</th><th>k</th><th>threshold</th><th>fit s</th><th>predict s</th><th>peak RSS MB</th></tr></thead>
<tbody>
{% for row in rows %}<tr><td>{{ row.name }}</td>{% for v in row.metrics %}<td>{{ v }}</td>{% endfor %}<td>{{ row.rule }}</td><td>{{ row.k }}</td><td>{{ row.threshold }}</td><td>{{ row.fit_seconds }}</td><td>{{ row.predict_seconds }}</td><td>{{ row.peak_rss_mb }}</td></tr>
{% endfor %}</tbody>
</table></div>
{% for row in rows %}{% if row.params %}<details><summary>{{ row.name }}: parameters</summary><pre>{{ row.params }}</pre></details>{% endif %}{% endfor %}
</details>
{% if inputs %}<details><summary>Input files</summary><ul>{% for split, f in inputs %}<li>{{ split }}: {{ f.path }} (SHA-256 {{ f.sha256 }}): <span class="input-status">{{ f.status }}</span></li>{% endfor %}</ul>{% if data_notes %}<p>{% for n in data_notes %}{{ n }}<br>{% endfor %}</p>{% endif %}</details>{% endif %}

<h2>F1 against label training frequency</h2>
{% if buckets %}
<p>Mean per-label F1 of the labels with at least one positive in the evaluated split, grouped by training positives (power-of-two buckets).</p>
<img alt="F1 against training frequency" src="data:image/png;base64,{{ f1_png }}">
<table id="f1-by-frequency">
<thead><tr><th>train positives</th><th>labels</th>{% for m in bucket_models %}<th>{{ m }}</th>{% endfor %}</tr></thead>
<tbody>
{% for b in buckets %}<tr><td>{{ b.label }}</td><td>{{ b.n_labels }}</td>{% for m in bucket_models %}<td>{{ fmt(b.f1[m]) }}</td>{% endfor %}</tr>
{% endfor %}</tbody>
</table>
{% else %}<p>No per-label results ({{ per_label_file }} not found).</p>{% endif %}

<h2>Evidence: {{ split or "test" }} documents and their top labels</h2>
{% if evidence %}
<p>For each neural model, a few {{ split or "test" }} documents with its top predicted labels. Highlighted: the highest-weight attention spans of each label (colour per label; hover for the label). &#10003; marks a gold label; underlined: gold evidence, when given.</p>
{% for model, docs in evidence %}<h3>{{ model }}</h3>
{% for d in docs %}<div class="example">
<h4>{{ d.doc_id }}</h4>
{% if d.gold %}<p class="meta">Gold: {{ d.gold }}</p>{% endif %}
<table class="codes"><thead><tr><th>label</th><th>gold</th><th>description</th><th>probability</th><th>spans (weight)</th></tr></thead><tbody>
{% for c in d.codes %}<tr{% if c.gold %} class="hit"{% endif %}><td><mark class="c{{ c.colour }}">{{ c.code }}</mark></td><td>{% if c.gold %}&#10003;{% endif %}</td><td>{{ c.description }}</td><td>{{ c.prob }}</td><td>{% for s in c.spans %}&ldquo;{{ s.text }}&rdquo; ({{ s.weight }}){% if not loop.last %}; {% endif %}{% endfor %}</td></tr>
{% endfor %}</tbody></table>
<div class="doc">{{ d.html }}</div>
</div>
{% endfor %}{% endfor %}
{% else %}<p>No evidence in this run folder ({{ evidence_file }}): evidence spans come from the attention of the neural rows (PLANT, plant=False), and this run has none.</p>{% endif %}

<h2>Zero-shot predictions: labels never seen in training</h2>
{% if zero_shot_recorded %}
<p>For each row, the {{ split or "test" }} documents' labels with no training document that the row predicted under its decision rule (chosen on dev), in document order; a run lists a bounded number per row (20 by default) and counts them all. &#10003;: the label is gold for the document. Score: the row's own score, which ranked the label; probability: the network's own, for the label (none where the descriptions scored it). Evidence, as character offsets [start, end) into the document: the spans the network's attention points at for the label (<code>explain</code>), or, for a label the descriptions scored, the sentences that match its description best (their TF-IDF cosine as the weight).</p>
{% for z in zero_shot %}<h3>{{ z.name }}</h3>
{% if z.status == "missing" %}<p class="zero-shot-note">No zero-shot record for this row{% if z.error %} ({{ z.error }}){% endif %}.</p>
{% elif z.status == "none" %}<p class="zero-shot-note">No zero-shot predictions {{ z.where }}; {{ z.n_zero_shot_labels }} labels have no training document.</p>
{% else %}<p class="zero-shot-note">{{ z.n_predictions }} zero-shot predictions {{ z.where }} over {{ z.n_documents }} documents, {{ z.n_correct }} correct; {% if z.shown < z.n_predictions %}the first {{ z.shown }} are listed (at most {{ z.max_listed }} per row){% else %}all are listed{% endif %}.{% if not z.explained %} No evidence spans: this row's model has no <code>explain</code>.{% endif %}</p>
<table class="zero-shot" id="zero-shot-{{ loop.index0 }}"><thead><tr><th>document</th><th>label</th><th>description</th><th>gold</th><th>rank</th><th>score</th><th>probability</th><th>evidence spans [start, end) (weight)</th></tr></thead><tbody>
{% for r in z.rows %}<tr{% if r.hit %} class="zs-hit"{% endif %}><td>{{ r.doc_id }}</td><td>{{ r.label }}</td><td>{{ r.description }}</td><td>{{ r.gold }}</td><td>{{ r.rank }}</td><td>{{ r.score }}</td><td>{{ r.prob }}</td><td>{% if r.by and r.spans %}<span class="zs-by">{{ r.by }}:</span> {% endif %}{% for s in r.spans %}[{{ s.start }}, {{ s.end }}) &ldquo;{{ s.text }}&rdquo; ({{ s.weight }}){% if not loop.last %}; {% endif %}{% endfor %}</td></tr>
{% endfor %}</tbody></table>
{% endif %}{% endfor %}
{% else %}<p class="zero-shot-note">This run folder lists no zero-shot predictions: its {{ results_file }} predates the listing (written by an older xplant). Rerun <code>xplant run</code> to list them.</p>{% endif %}

<h2>Attention similarity of related rare labels</h2>
{% if similarity %}
<p>Mean pairwise cosine similarity of the attention distributions of labels in the same group, averaged over documents. The paper reports about {{ paper.random }} with random initialisation and {{ paper.planted }} after planting.</p>
{% if similarity_png %}<img alt="attention similarity" src="data:image/png;base64,{{ similarity_png }}">{% endif %}
<table id="similarity">
<thead><tr><th>group</th><th>labels</th><th>documents</th>{% for m in similarity_models %}<th>{{ m }}</th>{% endfor %}</tr></thead>
<tbody>
{% for g in similarity %}<tr><td>{{ g.group }}</td><td>{{ g.labels }}</td><td>{{ g.n_documents }}</td>{% for v in g.cells %}<td>{{ v }}</td>{% endfor %}</tr>
{% endfor %}<tr><td><b>mean</b></td><td></td><td></td>{% for v in similarity_mean %}<td><b>{{ v }}</b></td>{% endfor %}</tr>
</tbody>
</table>
{% if similarity_note %}<p>{{ similarity_note }}</p>{% endif %}
{% else %}<p>No similarity file ({{ similarity_file }}) in the run folder.</p>{% endif %}
</body>
</html>
"""


def _fmt(v, digits=4):
    if v is None:
        return "\u2013"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "\u2013"
        return f"{v:.{digits}f}"
    return str(v)


def _pct(v):
    """A metric in percent, one decimal (``0.4123`` -> ``41.2``); ``–`` when missing."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        return "\u2013"
    return f"{100 * v:.1f}"


def _input_status(inputs):
    """``[(split, {path, sha256, status})]``: whether each input file is still what the run read."""
    from .._files import sha256_file
    out = []
    for split, rec in sorted((inputs or {}).items()):
        if not isinstance(rec, dict) or "path" not in rec:
            continue
        path = Path(str(rec["path"]))
        if not path.is_file():
            status = "missing now"
        elif sha256_file(path) == rec.get("sha256"):
            status = "unchanged since the run"
        else:
            status = "CHANGED since the run: the report's documents may differ from the file"
        out.append((str(split), {"path": str(path), "sha256": str(rec.get("sha256")),
                                 "status": status}))
    return out


def _is_count(key):
    """Metrics that are not fractions (shown as they are, not in percent)."""
    return key.startswith(("mean_", "n_", "zero_n_")) or key.endswith("_per_doc")


def _import_report_deps():
    try:
        import jinja2
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"the HTML report needs jinja2 and matplotlib ({exc.name} is missing): pip install 'xplant[report]'"
        ) from None
    return jinja2, matplotlib


def _png_b64(path):
    return base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _plain(label):
    """A label matplotlib shows literally (no mathtext)."""
    return str(label).replace("$", r"\$")


def _plot_f1(buckets, models, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), dpi=100)
    ax = fig.add_subplot()
    x = list(range(len(buckets)))
    for name in models:
        ax.plot(x, [b["f1"][name] for b in buckets], marker="o", label=_plain(name))
    ax.set_xticks(x, [b["label"] for b in buckets])
    if len(buckets) > 9:                    # long tails (EURLEX57K): keep the labels apart
        ax.tick_params(axis="x", labelrotation=40)
    ax.set_xlabel("label training positives (log2 buckets)")
    ax.set_ylabel("mean per-label F1")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    fig.tight_layout()
    from .._files import atomic_open
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png")


def _plot_similarity(groups, models, path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), dpi=100)
    ax = fig.add_subplot()
    width = 0.8 / max(len(models), 1)
    for j, name in enumerate(models):
        xs = [i + (j - (len(models) - 1) / 2) * width for i in range(len(groups))]
        ys = [g["similarity"].get(name, float("nan")) for g in groups]
        ax.bar(xs, ys, width=width, label=_plain(name))
    for key, style in (("random", ":"), ("planted", "--")):
        value = PAPER_SIMILARITY[key]
        ax.axhline(value, color="grey", linestyle=style, linewidth=1, label=f"paper, {key}: {value}")
    ax.set_xticks(range(len(groups)), [_plain(g.get("group", "")) for g in groups])
    ax.set_ylabel("mean pairwise cosine similarity")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    from .._files import atomic_open
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", bbox_inches="tight")


def _span_rows(text, spans):
    rows = []
    for s in spans or []:
        if isinstance(s, dict):
            start, end, weight = s["start"], s["end"], s.get("weight")
            shown = s.get("text") if isinstance(s.get("text"), str) else text[start:end]
        else:
            start, end = s
            shown, weight = text[start:end], None
        rows.append({"text": shown, "weight": _fmt(weight, 3)})
    return rows


def _evidence_rows(evidence, examples):
    out = []
    for model, docs in evidence.items():
        shown = []
        for j, d in enumerate(docs[:examples]):
            label = f"evidence {model}[{j}]"
            for c in d["codes"]:
                if not isinstance(c, dict):
                    raise ValueError(f"{label}: each code must be an object {{code, prob, spans}}")
            html = highlight_html(d["text"], d["codes"], doc_label=label)  # validates the offsets
            codes = [
                {
                    "code": str(c.get("code", "")),
                    "prob": _fmt(c.get("prob"), 3),
                    "spans": _span_rows(d["text"], c.get("spans")),
                    "colour": i % N_COLOURS,
                    "gold": bool(c.get("gold", False)),
                    "description": str(c.get("description") or ""),
                }
                for i, c in enumerate(d["codes"])
            ]
            gold = d.get("gold") or []
            shown.append({"doc_id": str(d.get("doc_id", j)), "codes": codes, "html": html,
                          "gold": ", ".join(str(g) for g in gold)})
        out.append((model, shown))
    return out


def render_report(run_dir, *, out=None, examples=None, overwrite=False):
    """Write ``report.html`` and its PNG plots for an ``xplant run`` folder.

    Parameters
    ----------
    run_dir : str or Path
        The run folder. Read: ``results.json`` (required), ``per_label.npz``
        (see :func:`save_per_label`), ``evidence.json`` and
        ``similarity.json`` (each optional; its section says when absent).
        Each row's ``zero_shot`` record in ``results.json`` (its predictions
        of labels never seen in training, with their evidence spans) is
        listed; a folder without any renders with a note. Schemas in
        :doc:`/guide/cli`, section "The run folder".
    out : str or Path, optional
        Folder for ``report.html``, ``f1_by_frequency.png`` and
        ``similarity.png``; created if needed. Default: ``run_dir``, whose
        report is the run's own file and is always rewritten. Elsewhere the
        rule of every output holds (:func:`xplant._outputs.check_output`): an
        existing report is replaced only with ``overwrite``.
    examples : int, optional
        Documents shown per model in the evidence section (the first ones of
        ``evidence.json``); default 3.
    overwrite : bool, default=False
        Replace an existing ``report.html`` in ``out`` (``--overwrite``).

    Returns
    -------
    Path
        The written ``report.html``. The page is self-contained: the plots
        are embedded as base64 PNGs (and also written beside it).

    Raises
    ------
    FileNotFoundError
        If ``results.json`` is missing.
    FileExistsError
        If ``out`` is not the run folder, holds ``report.html`` and
        ``overwrite`` is False.
    ValueError
        If a file does not follow its schema, or ``examples < 0``.
    ImportError
        If jinja2 or matplotlib is missing (the ``report`` extra).

    Notes
    -----
    Every string from the files (model names, codes, document text) is
    HTML-escaped: Jinja2 runs with autoescape, and the highlighted text is
    assembled from :func:`html.escape`-d pieces by :func:`highlight_html`.
    """
    jinja2, _ = _import_report_deps()
    from markupsafe import Markup

    if examples is None:
        examples = DEFAULT_EXAMPLES
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 0:
        raise ValueError(f"examples must be a non-negative int, got {examples!r}")
    run_dir = Path(run_dir)
    out = Path(out) if out is not None else run_dir
    if out.resolve() != run_dir.resolve():
        from .._outputs import check_output
        check_output(out / REPORT_FILE, overwrite=overwrite, what="report")
    out.mkdir(parents=True, exist_ok=True)
    results = read_results(run_dir)

    metric_names = []
    for m in results["models"]:
        for key in m.get("metrics", {}):
            if key not in metric_names:
                metric_names.append(key)
    headline = [(k, h) for k, h in HEADLINE if any(k in m.get("metrics", {}) for m in results["models"])]
    rows = [
        {
            # a row that is another by construction says so (the tables print it once)
            "name": m["name"] + (f" (= {m['same_as']})" if m.get("same_as") else ""),
            "headline": [_pct(m.get("metrics", {}).get(k)) for k, _ in headline],
            "metrics": [_fmt(m.get("metrics", {}).get(k), 2) if _is_count(k)
                        else _pct(m.get("metrics", {}).get(k)) for k in metric_names],
            "rule": m.get("rule") or "top_k",          # entries written before: top-k
            "k": _fmt(m.get("k")),
            "threshold": _fmt(m.get("threshold")),
            "fit_seconds": _fmt(m.get("fit_seconds"), 1),
            "predict_seconds": _fmt(m.get("predict_seconds"), 1),
            "peak_rss_mb": _fmt(m.get("peak_rss_mb"), 0),
            "params": json.dumps(m["params"], indent=1, sort_keys=True, default=str) if m.get("params") else "",
        }
        for m in results["models"]
    ]

    buckets, bucket_models, f1_png = [], [], ""
    per_label_path = run_dir / PER_LABEL_FILE
    if per_label_path.is_file():
        per_label = load_per_label(per_label_path)
        bucket_models = list(per_label["f1"])
        buckets = f1_by_frequency(per_label["train_frequency"], per_label["support"], per_label["f1"])
        if buckets and bucket_models:
            _plot_f1(buckets, bucket_models, out / F1_PLOT)
            f1_png = _png_b64(out / F1_PLOT)
        else:
            buckets = []

    evidence = []
    if (run_dir / EVIDENCE_FILE).is_file():
        evidence = _evidence_rows(read_evidence(run_dir / EVIDENCE_FILE), examples)
        evidence = [(model, [dict(d, html=Markup(d["html"])) for d in docs]) for model, docs in evidence]

    similarity, similarity_models, similarity_mean, similarity_png, note = [], [], [], "", ""
    if (run_dir / SIMILARITY_FILE).is_file():
        sim = read_similarity(run_dir / SIMILARITY_FILE)
        groups = sim["groups"]
        for g in groups:
            for name in g["similarity"]:
                if name not in similarity_models:
                    similarity_models.append(name)
        for g in groups:
            labels = g.get("labels") or []
            similarity.append(
                {
                    "group": str(g.get("group", "")),
                    "labels": ", ".join(str(x) for x in labels),
                    "n_documents": _fmt(g.get("n_documents")),
                    "cells": [_fmt(g["similarity"].get(name), 3) for name in similarity_models],
                }
            )
        for name in similarity_models:
            vals = [g["similarity"][name] for g in groups if isinstance(g["similarity"].get(name), (int, float))]
            similarity_mean.append(_fmt(sum(vals) / len(vals), 3) if vals else _fmt(None))
        note = str(sim.get("note", ""))
        if groups and similarity_models:
            _plot_similarity(groups, similarity_models, out / SIMILARITY_PLOT)
            similarity_png = _png_b64(out / SIMILARITY_PLOT)

    zero_shot, zero_shot_recorded = zero_shot_sections(results["models"],
                                                       str(run_dir / RESULTS_FILE))
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    page = env.from_string(_TEMPLATE).render(
        results={"dataset": results.get("dataset", ""), "split": results.get("split", ""), "created": results.get("created", "")},
        versions=sorted((str(k), str(v)) for k, v in (results.get("versions") or {}).items()),
        metric_names=metric_names,
        headline_names=[h for _, h in headline],
        rows=rows,
        split=str(results.get("split", "")),
        optimistic=(str(results.get("test_source", "")) or "scores on dev, which also chose")
        if results.get("optimistic") else "",
        inputs=_input_status(results.get("inputs")),
        data_notes=[str(results[k]) for k in ("dev_source", "test_source")
                    if results.get(k) not in (None, "file")],
        buckets=buckets,
        bucket_models=bucket_models,
        f1_png=f1_png,
        fmt=_fmt,
        per_label_file=PER_LABEL_FILE,
        evidence=evidence,
        evidence_file=EVIDENCE_FILE,
        zero_shot=zero_shot,
        zero_shot_recorded=zero_shot_recorded,
        results_file=RESULTS_FILE,
        similarity=similarity,
        similarity_models=similarity_models,
        similarity_mean=similarity_mean,
        similarity_png=similarity_png,
        similarity_note=note,
        similarity_file=SIMILARITY_FILE,
        paper=PAPER_SIMILARITY,
        colours=_COLOURS,
    )
    path = out / REPORT_FILE
    from .._files import write_text
    write_text(path, page)
    return path
