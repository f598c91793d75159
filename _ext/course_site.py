"""Sphinx extension for the course website: offline MathJax and notebook launch links.

- MathJax 3 is served from the built site, not a CDN: its ES5 bundle comes from the
  pinned PyPI package django-static-mathjax and is copied into ``_static/mathjax``.
- Two console errors of the theme stack are avoided: the colour mode defaults to "auto",
  and sphinx-thebe's inline script, registered twice, is included once.
- Colab opens notebooks only: for chapters written as MyST Markdown the Colab button
  points at the ``.ipynb`` of the same path on the ``notebooks`` branch, which
  ``make notebooks`` generates with jupytext (Binder and JupyterHub open the ``.md`` with
  jupytext directly).
"""

from __future__ import annotations

import shutil
from pathlib import Path

MATHJAX_ENTRY = "mathjax/tex-mml-chtml.js"  # relative to _static
NOTEBOOKS_BRANCH = "notebooks"


def _mathjax_source() -> Path:
    import mathjax  # django-static-mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def _config_inited(app, config) -> None:
    config.mathjax_path = MATHJAX_ENTRY


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """jupyter-book and sphinx-book-theme both register sphinx-thebe's inline script, which
    redeclares a const and logs a console error: keep the first copy of each script. An
    empty default colour mode makes pydata-sphinx-theme log an error: use "auto"."""
    seen, kept = set(), []
    for js in context.get("script_files", []):
        attrs = getattr(js, "attributes", {}) or {}
        key = (getattr(js, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    if "script_files" in context:
        context["script_files"] = kept
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    dest = Path(app.outdir) / "_static" / "mathjax"
    if not (dest / "tex-mml-chtml.js").is_file():
        shutil.copytree(_mathjax_source(), dest, dirs_exist_ok=True)


def _colab_for_markdown_notebooks(app, pagename, templatename, context, doctree) -> None:
    source = context.get("sourcename", "") or ""
    if not (source.endswith(".md") or source.endswith(".md.txt")):
        return
    for button in context.get("header_buttons", []):
        for item in button.get("buttons", []) if isinstance(button, dict) else []:
            if item.get("text") == "Colab" and "/blob/" in item.get("url", ""):
                head, _, _ = item["url"].partition("/blob/")
                item["url"] = f"{head}/blob/{NOTEBOOKS_BRANCH}/{pagename}.ipynb"


def setup(app):
    _mathjax_source()  # fail early, with an ImportError naming the package, if missing
    app.connect("config-inited", _config_inited)
    app.connect("build-finished", _build_finished)
    # after sphinx-book-theme has added its launch buttons (priority 501)
    app.connect("html-page-context", _colab_for_markdown_notebooks, priority=900)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
