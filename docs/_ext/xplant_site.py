"""How the pages read in a browser: links only where there is somewhere to go.

* Text that docutils takes for a URI on its own (``FILE:ROW`` in a command's help,
  ``file:`` being a URI scheme) is shown as text: only web and mail addresses that
  the source writes out become links of their own.
* Formulas render offline: sphinx-mathjax-offline (the ``docs`` extra) copies MathJax 3,
  its TeX input and its fonts into ``_static/mathjax`` and points ``mathjax_path`` there.
  Its setup runs from here: it declares no parallel safety, which ``-j auto`` under
  ``-W`` turns into an error, and all it does is copy files once the build has finished.
* A page with no pages below it (getting started, the command-line reference, the
  design, the changelog) gets no left sidebar, rather than an empty one: the theme
  keeps the sidebar of every page whose top-level section is in a hidden toctree.
"""

import importlib
import re

from docutils import nodes
from sphinx.transforms import SphinxTransform

#: What a standalone address may start with and still be a link.
LINK_SCHEMES = re.compile(r"^(https?://|ftp://|mailto:)", re.I)


class UnlinkNonWebAddresses(SphinxTransform):
    """A standalone "URI" that is no web or mail address becomes its text."""

    default_priority = 100

    def apply(self, **kwargs):
        for ref in list(self.document.findall(nodes.reference)):
            uri = ref.get("refuri")
            if not uri or ref.get("internal") or LINK_SCHEMES.match(uri):
                continue
            if ":" not in uri.split("/", 1)[0] or ref.astext() != uri:
                continue             # a relative link, or a link the source wrote with its text
            ref.replace_self(nodes.Text(ref.astext()))


def _top_section(env, docname):
    """The page just below the root that ``docname`` is under (itself for a top-level page)."""
    parents = {}
    for parent, children in env.toctree_includes.items():
        for child in children:
            parents.setdefault(child, parent)
    seen = set()
    while parents.get(docname) not in (None, env.config.root_doc) and docname not in seen:
        seen.add(docname)
        docname = parents[docname]
    return docname


def _drop_empty_sidebar(app, pagename, templatename, context, doctree):
    env = app.builder.env
    if pagename == env.config.root_doc or pagename not in env.all_docs:
        return
    if not env.toctree_includes.get(_top_section(env, pagename)):
        context["sidebars"] = []


def setup(app):
    importlib.import_module("sphinx-mathjax-offline").setup(app)
    app.add_transform(UnlinkNonWebAddresses)
    app.connect("html-page-context", _drop_empty_sidebar, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
