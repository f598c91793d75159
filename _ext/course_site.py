"""Sphinx extension for the course website: offline MathJax and notebook launch links.

- MathJax 3 is served from the built site, not a CDN: its ES5 bundle comes from the
  pinned PyPI package django-static-mathjax and is copied into ``_static/mathjax``.
- Two console errors of the theme stack are avoided: the colour mode defaults to "auto",
  and sphinx-thebe's inline script, registered twice, is included once.
- Colab opens notebooks only: for chapters written as MyST Markdown the Colab button
  points at the executed ``.ipynb`` that this build writes to ``_sources/`` (the download
  button's file), as published with the site on the ``gh-pages`` branch by ``make publish``
  (Binder opens the ``.md`` with jupytext directly).
- Layout (``static/course.css``): the page never scrolls sideways on a phone, display
  equations that do not fit scroll with a visible cue, code fits the column at desktop width.
- Downloads (``static/course-download.js``): the download menu's items (.ipynb, source)
  save the file under its name, also over ``file://`` and from a server that sends
  ``.ipynb`` as ``application/json`` (a ``download`` attribute, and over http(s) a fetch
  saved from a Blob; from a file, the text of ``_sources/<file>.js``, which the build writes
  next to each file there), instead of opening a tab of JSON.
- Accessibility: bibliography entries are list items (``role="listitem"``), not the
  deprecated ``doc-biblioentry`` role docutils gives them.
- Raw mathematics fails the build: at its end, each page's visible text (code, scripts
  and MathJax's ``.math`` containers left out) is searched for TeX delimiters that MathJax
  never typesets there (``RAW_MATH``: ``\\(``, ``\\)``, ``\\[``, ``\\]``, ``$$``, a ``$...$``
  pair), such as the two ``$`` left when ``$$`` starts the line right after text; each
  page with one gets a warning (an error under ``-W``).
- Page weight: the theme's icon script (1.5 MB of Font Awesome drawn as SVG by JavaScript)
  is replaced by an empty script, and its web fonts are cut down (fontTools, pinned through
  matplotlib) to the glyphs the pages and the theme's style sheets use.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
MATHJAX_ENTRY = "mathjax/tex-mml-chtml.js"  # relative to _static
PAGES_BRANCH = "gh-pages"  # where `make publish` pushes _build/html
# TeX delimiters that MathJax typesets only inside .math containers: seen in a page's
# visible text they are raw mathematics (tests/test_website.py uses this one too).
RAW_MATH = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^\s$][^$\n]*\$")
NOT_TEXT = "pre, code, script, style, .highlight, .math, mjx-container"
BLOCKS = ["address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div",
          "dl", "dt", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6",
          "header", "hr", "li", "main", "nav", "ol", "p", "section", "summary", "table", "td",
          "th", "tr", "ul"]


def _mathjax_source() -> Path:
    import mathjax  # django-static-mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


_SETUP_REPOSITORY = re.compile(r'^COURSE_REPOSITORY = "([^"]*)"', re.MULTILINE)


def _check_setup_cells(app) -> None:
    """Each chapter's set-up cell (tag course-setup) installs the course from the repository
    that _config.yml names (repository.url): fail the build when one names another."""
    from sphinx.errors import ExtensionError

    repository = (app.config.html_theme_options or {}).get("repository_url", "")
    wrong = []
    for path in sorted(Path(app.srcdir, "chapters").glob("*.md")):
        for named in _SETUP_REPOSITORY.findall(path.read_text(encoding="utf-8")):
            if named != repository:
                wrong.append(f"{path.name}: {named}")
    if wrong:
        raise ExtensionError(f"set-up cells name a repository other than _config.yml's "
                             f"repository.url ({repository}): {wrong}")


def _config_inited(app, config) -> None:
    config.mathjax_path = MATHJAX_ENTRY
    config.html_static_path = [*config.html_static_path, str(STATIC)]
    # one search box: the one at the top of the navigation sidebar (not also a header bar)
    config.html_theme_options = {**(config.html_theme_options or {}), "navbar_persistent": []}


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
    _subset_icons(Path(app.outdir))
    _download_scripts(Path(app.outdir))
    _check_raw_math(app)


def _download_scripts(outdir: Path) -> None:
    """Next to each file in ``_sources`` (what the download menu links to), ``<file>.js``:
    the file's text for ``static/course-download.js`` to save from a page opened as a file
    (where fetch is refused and Chromium ignores the ``download`` attribute). The string is
    JSON-escaped ASCII; saved from a Blob it is the file's UTF-8 bytes again."""
    import json

    for path in sorted((outdir / "_sources").rglob("*")):
        if path.suffix not in (".ipynb", ".md") or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8")
        path.with_name(path.name + ".js").write_text(
            "(self.courseDownloads = self.courseDownloads || {})"
            f"[document.currentScript.src.slice(0, -3)] = {json.dumps(text)};\n", encoding="ascii")


def visible_text(html: str) -> str:
    """A page's text as a reader sees it, without code, scripts or MathJax's containers:
    whitespace collapsed as a browser does, one line per block (so that a ``$`` pair never
    spans two paragraphs). The text of ``<main>``, or of the whole page if it has none."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    root = soup.find("main") or soup.body or soup
    for element in root.select(NOT_TEXT):
        element.decompose()
    for string in root.find_all(string=True):
        string.replace_with(re.sub(r"\s+", " ", string))
    for block in root.find_all(BLOCKS):
        block.insert_before("\n")
        block.append("\n")
    return re.sub(r" *\n[\s]*", "\n", root.get_text()).strip()


def _check_raw_math(app) -> None:
    """Warn, naming the page and the text, for each written page whose visible text shows
    raw TeX (``RAW_MATH``). All pages are read, not only those this build rewrote, so a page
    does not pass the next build just because it was not written again."""
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    outdir = Path(app.outdir)
    for docname in sorted(app.env.all_docs):
        page = outdir / f"{docname}.html"
        if not page.is_file():
            continue
        text = visible_text(page.read_text(encoding="utf-8"))
        for line in text.splitlines():
            found = [m.group(0) for m in RAW_MATH.finditer(line)]
            if found:
                logger.warning("%s.html shows raw TeX %s (MathJax does not typeset it there; "
                               "a $$ block needs a blank line before it): %r", docname,
                               found[:3], line[:160], location=docname,
                               type="course", subtype="raw_math")


# Font Awesome's glyphs live in the private use area; style sheets write them as the
# character itself or as a CSS escape ("\f0c9").
_PUA = re.compile(r"[\ue000-\uf8ff]|\\([ef][0-9a-fA-F]{3})(?![0-9a-fA-F])")


def _icon_chars(text: str) -> set[str]:
    return {chr(int(m.group(1), 16)) if m.group(1) else m.group(0) for m in _PUA.finditer(text)}

_RULE = re.compile(r"([^{}]*)\{([^{}]*)\}")
_FA_MAPPING = re.compile(r"\s*\.(fa-[\w-]+)::?(?:before|after)\s*")
_FA_CLASS = re.compile(r"\bfa-[a-z0-9-]+")
_FA_FONT = re.compile(r"url\((\.\./vendor/fontawesome/webfonts/(fa-[\w-]+))\.woff2\) format\(\"woff2\"\),"
                      r"url\(\.\./vendor/fontawesome/webfonts/fa-[\w-]+\.ttf\) format\(\"truetype\"\)")


def _subset_icons(outdir: Path) -> None:
    """Serve only the icons the site uses.

    The glyphs kept: those of every ``fa-*`` class named in a page or in the theme's
    scripts, and every icon character a style sheet uses outside Font Awesome's own
    class table (the theme's admonition, link and navigation icons). The fonts are
    written as WOFF (zlib) and the style sheet's ``@font-face`` rules point at them.
    """
    static = outdir / "_static"
    css_path = static / "styles" / "pydata-sphinx-theme.css"
    fonts = static / "vendor" / "fontawesome" / "webfonts"
    script = static / "scripts" / "fontawesome.js"
    if not css_path.is_file() or not fonts.is_dir():
        return
    mapping, keep = _icon_table([p for p in static.rglob("*.css") if "mathjax" not in p.parts])
    used = _classes_used(outdir, static)
    for name in used:
        keep |= mapping.get(name, set())
    unicodes = sorted(ord(c) for c in keep)

    css = css_path.read_text(encoding="utf-8")
    for rel, stem in set(_FA_FONT.findall(css)):
        source = fonts / f"{stem}.ttf"
        if source.is_file():
            _subset_font(source, fonts / f"{stem}.woff", unicodes)
            for ext in ("woff2", "ttf"):
                (fonts / f"{stem}.{ext}").unlink(missing_ok=True)
    css = _FA_FONT.sub(lambda m: f'url({m.group(1)}.woff) format("woff")', css)

    def unused_class_rule(m: re.Match) -> str:  # Font Awesome's table of ~1900 icon classes
        names = [_FA_MAPPING.fullmatch(sel) for sel in m.group(1).split(",")]
        if _PUA.search(m.group(2)) and all(names) and not any(n.group(1) in used for n in names):
            return ""
        return m.group(0)

    css = _RULE.sub(unused_class_rule, css)
    css_path.write_text(css, encoding="utf-8")
    # The theme's <i class="fa-..."> icons are drawn by the web font and the class rules in
    # its style sheet; the 1.5 MB script that redraws them as SVG is not needed.
    script.write_text("/* Icons are drawn by the subset Font Awesome web fonts (course_site.py). */\n",
                      encoding="utf-8")
    script.with_suffix(".js.map").unlink(missing_ok=True)


def _icon_table(css_files: list[Path]) -> tuple[dict[str, set[str]], set[str]]:
    """The icon characters of the style sheets: ``fa-*`` class name -> its characters (from
    rules whose selectors are all such classes), and the characters of every other rule
    (kept whatever the pages use)."""
    mapping: dict[str, set[str]] = {}
    keep: set[str] = set()
    for path in css_files:
        for selectors, body in _RULE.findall(path.read_text(encoding="utf-8")):
            chars = _icon_chars(body)
            if not chars:
                continue
            names = [_FA_MAPPING.fullmatch(sel) for sel in selectors.split(",")]
            if all(names):
                for m in names:
                    mapping.setdefault(m.group(1), set()).update(chars)
            else:
                keep |= chars
    return mapping, keep


def _classes_used(outdir: Path, static: Path) -> set[str]:
    """The ``fa-*`` class names named in a page of ``outdir`` or in the theme's scripts."""
    used = set()
    for path in [*outdir.rglob("*.html"), *(static / "scripts").glob("*.js")]:
        if path.name != "fontawesome.js":
            used |= set(_FA_CLASS.findall(path.read_text(encoding="utf-8", errors="replace")))
    return used


def _subset_font(source: Path, target: Path, unicodes: list[int]) -> None:
    """Write the glyphs of ``unicodes`` in the font ``source`` (with every layout feature)
    to ``target`` as WOFF."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = ["*"]
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=unicodes)
    subsetter.subset(font)
    subset.save_font(font, str(target), options)


def _citation_roles(app, pagename, templatename, context, doctree) -> None:
    """docutils gives each bibliography entry role="doc-biblioentry", which DPUB-ARIA 1.1
    deprecates; assistive technology then takes the entries' links for the items of their
    role="list" (axe: aria-deprecated-role, aria-required-children). Make them list items."""
    if "body" in context:
        context["body"] = context["body"].replace('role="doc-biblioentry"', 'role="listitem"')


def _colab_for_markdown_notebooks(app, pagename, templatename, context, doctree) -> None:
    source = context.get("sourcename", "") or ""
    if not (source.endswith(".md") or source.endswith(".md.txt")):
        return
    for button in context.get("header_buttons", []):
        for item in button.get("buttons", []) if isinstance(button, dict) else []:
            if item.get("text") == "Colab" and "/blob/" in item.get("url", ""):
                head, _, _ = item["url"].partition("/blob/")
                item["url"] = f"{head}/blob/{PAGES_BRANCH}/_sources/{pagename}.ipynb"


def _exercise_path(app, doctree) -> None:
    """On an exercise page, under its title: the chapter it practises (a link back) and how
    to get the course folder and check the notebook (``course_prerequisites`` in
    _config.yml maps each exercise page to its chapter)."""
    from docutils import nodes
    from sphinx import addnodes

    docname = app.env.docname
    chapter = app.config.course_prerequisites.get(docname)
    if not chapter:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        return
    notebook = f"{docname}.ipynb"
    if chapter in app.env.found_docs:
        ref = addnodes.pending_xref("", refdomain="std", reftype="doc",
                                    reftarget="/" + chapter, refdoc=docname,
                                    refexplicit=False, refwarn=True)
        ref += nodes.inline("", chapter)
    else:  # a book built from part of the course (a test's mini book): no link to follow
        ref = nodes.literal("", chapter)
    box = nodes.admonition(classes=["tip", "course-path"])
    box += nodes.title("", "Before you start")
    number = re.match(r"(\d+)_", Path(chapter).name)
    where = f"chapter {int(number.group(1))}, " if number else ""
    box += nodes.paragraph("", "", nodes.strong("", "Prerequisite: "), nodes.Text(where), ref,
                           nodes.Text(". Read it first: this exercise asks you to write what it explains."))
    steps = nodes.enumerated_list()
    for parts in (
        [nodes.Text("Get the course folder: clone the repository (GitHub button above) or "
                    "download it as a zip; then, in the folder, "),
         nodes.literal("", "make venv"), nodes.Text(" and "),
         nodes.literal("", "source .venv/bin/activate"), nodes.Text(".")],
        [nodes.Text("Open "), nodes.literal("", notebook),
         nodes.Text(" in JupyterLab and replace each stub with your code.")],
        [nodes.Text("Check it: "),
         nodes.literal("", f"python -m autograder check {notebook}"), nodes.Text(".")],
    ):
        steps += nodes.list_item("", nodes.paragraph("", "", *parts))
    box += steps
    title = next(iter(section.findall(nodes.title)), None)
    section.insert(section.index(title) + 1 if title is not None else 0, box)


def setup(app):
    import hashlib

    # A change to this extension or its style sheet changes this value, so Sphinx re-reads
    # and rewrites every page instead of keeping pages made by the previous version.
    digest = hashlib.sha256(Path(__file__).read_bytes() + (STATIC / "course.css").read_bytes()
                            + (STATIC / "course-download.js").read_bytes())
    app.add_config_value("course_site_digest", digest.hexdigest()[:16], "env")
    app.add_config_value("course_prerequisites", {}, "env")
    app.connect("doctree-read", _exercise_path)
    _mathjax_source()  # fail early, with an ImportError naming the package, if missing
    app.connect("config-inited", _config_inited)
    app.connect("build-finished", _build_finished)
    app.connect("builder-inited", _check_setup_cells)
    # after sphinx-book-theme has added its launch buttons (priority 501)
    app.connect("html-page-context", _colab_for_markdown_notebooks, priority=900)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("html-page-context", _citation_roles)
    app.add_css_file("course.css")
    app.add_js_file("course-download.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
