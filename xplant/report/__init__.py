"""Report: one self-contained HTML page with the results of an ``xplant run``.

Needs the ``report`` extra (jinja2, matplotlib), imported only when a report
is rendered; never imports torch.

- :func:`render_report` writes ``report.html`` and PNG plots for a run folder;
- :func:`save_per_label` / :func:`load_per_label` write and read
  ``per_label.npz``;
- :func:`f1_by_frequency` groups per-label F1 by training frequency;
- :func:`highlight_html` marks evidence spans in escaped document text.
"""

from ._buckets import f1_by_frequency, frequency_buckets
from ._highlight import highlight_html
from ._io import load_per_label, save_per_label
from ._render import render_report

__all__ = [
    "f1_by_frequency",
    "frequency_buckets",
    "highlight_html",
    "load_per_label",
    "render_report",
    "save_per_label",
]
