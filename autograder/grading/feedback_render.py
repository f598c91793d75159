"""The feedback page's HTML of each cell source, rendered once per worker (issue 25).

A feedback page renders each code cell's source with pygments (about a third of a page's
CPU) and each Markdown cell's with mistune (about a tenth). The locked cells (instructions,
setup, tests) are the same in every submission of an assignment, so :func:`apply` makes
nbconvert keep what it rendered, per source: a locked cell is rendered once per worker. The
key is everything the HTML depends on:

- code (``Highlight2HTML``): the lexer, the formatter's options, the source, the language
  and the cell's ``magics_language``;
- Markdown (``HTMLExporter.markdown2html``): the source and the exporter's anchor and lexer
  options; a cell with attachments, or an exporter that embeds images (whose HTML depends
  on files), is rendered each time.

Sources over :data:`CACHED_CHARS` are rendered each time; what is kept is bounded at
:data:`KEPT_CHARS` characters of HTML, the least recently used let go first: a worker's
memory stays the same however many learners' cells it sees.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

CACHED_CHARS = 20_000
KEPT_CHARS = 4_000_000  # for code and for Markdown, each


class _Kept:
    """HTML by key, at most :data:`KEPT_CHARS` characters of it (thread-safe)."""

    def __init__(self):
        self.html: OrderedDict[tuple, str] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, key) -> str | None:
        with self.lock:
            html = self.html.get(key)
            if html is not None:
                self.html.move_to_end(key)
            return html

    def put(self, key, html: str) -> None:
        with self.lock:
            if key not in self.html:
                self.html[key] = html
                self.size += len(html)
            while self.size > KEPT_CHARS and self.html:
                self.size -= len(self.html.popitem(last=False)[1])


def _kept(kept: _Kept, key, source, render, *args) -> str:
    """``render(*args)``'s HTML, kept in ``kept`` under ``key`` (None: not kept)."""
    try:
        hash(key)
    except TypeError:  # an unhashable option or metadata: not kept
        key = None
    if key is None or not isinstance(source, str) or len(source) > CACHED_CHARS:
        return render(*args)
    html = kept.get(key)
    if html is None:
        html = render(*args)
        kept.put(key, html)
    return html


def apply() -> None:
    """Patch nbconvert's code and Markdown rendering (once per process:
    :func:`autograder.grading.speedups.apply` calls it)."""
    from nbconvert.exporters.html import HTMLExporter
    from nbconvert.filters.highlight import Highlight2HTML

    highlight, markdown = Highlight2HTML.__call__, HTMLExporter.markdown2html
    code, text = _Kept(), _Kept()

    @functools.wraps(highlight)
    def __call__(self, source, language=None, metadata=None):
        try:
            key = (self.pygments_lexer, repr(sorted(self.extra_formatter_options.items())),
                   source, language, metadata.get("magics_language") if metadata else None)
        except Exception:  # noqa: BLE001 - options or metadata of another shape: not kept
            key = None
        return _kept(code, key, source, highlight, self, source, language, metadata)

    @functools.wraps(markdown)  # with its jinja "pass the context" mark
    def markdown2html(self, context, source):
        plain = not self.embed_images and not context.get("cell", {}).get("attachments")
        key = (source, self.anchor_link_text, self.exclude_anchor_links,
               repr(sorted(self.lexer_options.items()))) if plain else None
        return _kept(text, key, source, markdown, self, context, source)

    Highlight2HTML.__call__, HTMLExporter.markdown2html = __call__, markdown2html
