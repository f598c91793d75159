"""The pieces the workspace's HTML reports share: a page that needs nothing from another
host (its CSS inline, its charts inline SVG, no script), escaping, and a bar chart."""

from __future__ import annotations

from html import escape

CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1d1d1d; background: #fff; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid #ddd; padding: .3rem .6rem; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; } td.num, th.num { text-align: right; }
.note { color: #555; } .bar { fill: #3465a4; } .axis { stroke: #888; }
svg text { font: 12px system-ui, sans-serif; fill: #333; }
.side { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; }
pre { background: #f7f7f7; padding: .6rem; overflow-x: auto; font-size: 13px;
      border: 1px solid #e3e3e3; }
mark { background: #ffd966; } .nowrap { white-space: nowrap; } .rate { display: inline-block; height: .8rem;
       background: #3465a4; vertical-align: middle; }
"""


def page(title: str, body: str) -> str:
    """A whole HTML document: ``body`` (HTML) under ``title``, with the shared CSS inline.
    Its content security policy forbids loading anything (images are inline data)."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; img-src data:\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head>\n"
            f"<body>\n<h1>{escape(title)}</h1>\n{body}\n</body></html>\n")


def bars(counts: list[int], labels: list[str], *, title: str, width: int = 640,
         height: int = 220) -> str:
    """An inline SVG bar chart of ``counts`` (one bar each, ``labels`` under them), with
    ``title`` as its accessible name; each bar's count written above it."""
    n, top = max(len(counts), 1), max(counts, default=0) or 1
    left, bottom, plot_h = 30, 40, height - 60
    step = (width - left - 10) / n
    parts = [f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} '
             f'{height}"><title>{escape(title)}</title>',
             f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - 10}" '
             f'y2="{height - bottom}"/>']
    for i, (count, label) in enumerate(zip(counts, labels)):
        h = plot_h * count / top
        x = left + i * step + 2
        y = height - bottom - h
        parts.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{step - 4:.1f}" '
                     f'height="{h:.1f}"><title>{escape(label)}: {count}</title></rect>')
        if count:
            parts.append(f'<text x="{x + (step - 4) / 2:.1f}" y="{y - 4:.1f}" '
                         f'text-anchor="middle">{count}</text>')
        parts.append(f'<text x="{x + (step - 4) / 2:.1f}" y="{height - bottom + 16}" '
                     f'text-anchor="middle">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    """An HTML table; ``rows`` hold HTML already escaped; columns in ``numeric`` right-aligned."""
    def cell(tag: str, i: int, text: str) -> str:
        return f'<{tag} class="num">{text}</{tag}>' if i in numeric else f"<{tag}>{text}</{tag}>"

    head = "".join(cell("th", i, escape(h)) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
