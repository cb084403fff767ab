"""Plain-text and Markdown tables of run results (``results.json`` model entries)."""


#: Zero-shot labels (no training positive) in the main tables: their recall in the full
#: ranking (every label competing); over an open label space also the unseen-code
#: channel's R@5 (``unseen_R@5``: those codes ranked among the catalogue's unseen codes
#: alone), and the labels each row ranks. The group ranked alone in a closed space
#: (``zero_R@5``) stays in ``results.json``, where a group of one label scores 100 %.
TABLE_COLUMNS = (("P@1", "P@1"), ("P@3", "P@3"), ("P@5", "P@5"), ("nDCG@5", "nDCG@5"),
                 ("MAP", "MAP"), ("micro_F1", "miF1"), ("macro_F1", "maF1"),
                 ("F1_few", "F1 few"), ("F1_frequent", "F1 freq"), ("F1_zero", "F1 zero"),
                 ("zero_R@5_full", "zero R@5"), ("zero_n_labels", "zero n"),
                 ("unseen_R@5", "unseen R@5"), ("n_labels", "labels"))

#: Columns that hold counts, printed as integers (the others are percent).
COUNT_COLUMNS = ("zero_n_labels", "zero_n_documents", "n_labels")


def _cell(key, v, missing):
    if v is None or v != v:
        return missing
    return f"{int(v)}" if key in COUNT_COLUMNS else f"{100 * v:.1f}"


def rule_label(entry):
    """A results entry's decision rule in a few characters: ``top-3``, ``>=0.42``, ``per-label``.

    An entry without ``rule`` (written before the rule was chosen on dev)
    used the top-k rule.

    Examples
    --------
    >>> rule_label({"rule": "threshold", "k": 2, "threshold": 0.4213})
    '>=0.421'
    >>> rule_label({"k": 3})
    'top-3'
    """
    rule = entry.get("rule") or "top_k"
    if rule == "top_k":
        return f"top-{entry['k']}"
    if rule == "threshold":
        return f">={entry['threshold']:.3g}"
    return "per-label"


def format_table(models):
    """A plain-text table of the models' test metrics (percent; counts as integers) and fit time.

    The ``rule`` column is each row's decision rule (:func:`rule_label`),
    under which its F1 columns are computed; ``text`` the text it reads
    (its entry's ``text``: CodiEsp's ``en`` translation, ``es`` original, or
    both for a row that fuses the mention matcher).

    A row that is another row by construction (``same_as``, e.g. the α = 1
    row of a fit whose shortlist is the run's SVM) is printed once, as
    ``<name>  = <that row>`` under the table. The run's model (the row
    with the best dev MAP, ``"designated"``) is marked ``*`` and a line
    under the table says so.
    """
    head = ["model"] + [c for _, c in TABLE_COLUMNS] + ["text", "rule", "fit s"]
    rows = []
    for m in models:
        if m.get("same_as"):
            continue
        r = [m["name"] + (" *" if m.get("designated") else "")]
        for key, _ in TABLE_COLUMNS:
            r.append(_cell(key, m["metrics"].get(key, float("nan")),
                           "" if key == "unseen_R@5" else "nan"))
        r += [m.get("text") or "", rule_label(m), f"{m['fit_seconds']:.0f}"]
        rows.append(r)
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    same = [f"{m['name'].ljust(widths[0])}  = {m['same_as']}" for m in models if m.get("same_as")]
    mark = [("* the job's model: the row with the best dev MAP, chosen before test is read"
             + (", refitted on train + dev" if m.get("refit_of") else ""))
            for m in models if m.get("designated")]
    return "\n".join([line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
                     + same + mark)


#: Columns of the benchmark's Markdown table: (metric key, header).
MARKDOWN_COLUMNS = (("P@1", "P@1"), ("P@3", "P@3"), ("P@5", "P@5"), ("nDCG@5", "nDCG@5"),
                    ("RP@5", "RP@5"), ("MAP", "MAP"), ("micro_F1", "miF1"), ("macro_F1", "maF1"),
                    ("F1_frequent", "F1 freq"), ("F1_few", "F1 few"), ("F1_zero", "F1 zero"),
                    ("zero_R@5_full", "zero R@5"), ("zero_n_labels", "zero n"),
                    ("unseen_R@5", "unseen R@5"), ("n_labels", "labels"))


def markdown_table(models, columns=MARKDOWN_COLUMNS, *, resources=True):
    """A Markdown table of model entries (as in ``results.json``).

    Metrics are shown in percent, one decimal; a missing or NaN metric is
    shown as "-". With ``resources``, adds fit seconds, predicted documents
    per second and peak RSS (MB). A row that is another row by
    construction (``same_as``) says ``= <that row>`` instead of repeating
    its numbers.

    Parameters
    ----------
    models : list of dict
        Entries with ``name``, ``metrics`` and, with ``resources``,
        ``fit_seconds``, ``predict_seconds``/``predict_docs_per_second`` and
        ``peak_rss_mb``.
    columns : sequence of tuple
        The metric columns, ``(key, header)``: a key of ``metrics`` and its
        header.
    resources : bool, default=True
        Add the fit seconds, documents per second and peak RSS columns.

    Returns
    -------
    str

    Examples
    --------
    >>> print(markdown_table([{"name": "m", "metrics": {"P@1": 0.5}}], [("P@1", "P@1"), ("MAP", "MAP")],
    ...                      resources=False))
    | model | P@1 | MAP |
    |---|---:|---:|
    | m | 50.0 | - |
    """
    head = ["model"] + [h for _, h in columns]
    if resources:
        head += ["fit s", "pred docs/s", "peak RSS MB"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for m in models:
        cells = [str(m["name"])]
        if m.get("same_as"):         # the same row by construction: said, not repeated
            cells += [f"= {m['same_as']}"] + [""] * (len(head) - 2)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        for key, _ in columns:
            v = m["metrics"].get(key, m.get(key))       # e.g. dev_MAP sits beside the metrics
            cells.append(_cell(key, v, "-"))
        if resources:
            dps = m.get("predict_docs_per_second")
            cells += [f"{m['fit_seconds']:.1f}", "-" if dps is None else f"{dps:.0f}",
                      f"{m['peak_rss_mb']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
