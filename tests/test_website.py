"""The website as a reader meets it: in a real browser (headless Chromium), offline.

Each page is opened once per colour scheme at 390 px and widened to 1280 px (the ``views``
fixture), and every test below reads what those four views found. Every page opens from
_build/html with no console error and no request to any other host; mathematics is typeset
by the MathJax served from the site; images load and carry alt text; chapters and exercises
have download and launch buttons, and the download menu's .ipynb item saves the notebook (a
download event with its name and the built file's bytes) from a server that sends .ipynb as
application/json and from a page opened as a file; search finds "softmax"; internal links
and anchors resolve. On every page at 390 and 1280 px, light and dark: the page never
scrolls sideways, a display equation wider than its column scrolls with a visible cue, code
fits the column at 1280 px, captions show no raw labels. axe-core finds no WCAG 2.0 or 2.1
A/AA violation on any page: all its rules in the light scheme, its colour rules in the dark
one. Screenshots of every page at both widths and both schemes go to _build/screenshots/.
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from conftest import REPO

pytestmark = pytest.mark.book  # the built_book users share one worker (conftest)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = REPO / "_build" / "screenshots"
SKIP_PAGES = {"genindex.html", "search.html", "index.html"}  # index.html only redirects
sys.path.insert(0, str(REPO / "_ext"))
try:  # the build fails on raw TeX with the same pattern (course_site._check_raw_math)
    from course_site import RAW_MATH
finally:
    sys.path.remove(str(REPO / "_ext"))
RAW_LABEL = re.compile(r"\((?:eq|fig|thm|kc|tbl|sec)-[\w-]+\)|\bsqrt\(|\(\(\d+\.\d+\)\)")
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"  # pinned in package.json (npm ci)
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# axe-core's rules on the page, with its highlighted code sampled: thousands of token
# elements in a few dozen styles, and axe's colour-contrast rule costs milliseconds per
# text element it checks. An element's contrast is a function of its style (colour, size,
# weight, shadow, opacity) and of what lies behind it (each ancestor's background and
# opacity): AXE_RUN's key. One element per key is checked; the other token spans with the
# same key (no element inside them, no link or control in them: nothing else is left out)
# are replaced by their text (the same characters in a monospaced block: nothing moves).
# The colour rules (axe's tag cat.color: color-contrast, link-in-text-block) run apart,
# with MathJax's formulas hidden: their glyphs are drawn by CSS, which axe does not read
# (it checks no element of a formula), and their thousands of elements took a fifth of
# the colour rules' time. The other rules run on the whole page (formulas included).
# Returns {violations, code: text elements of the code, samples: those checked}. With
# colours_only, it runs only the colour rules. It leaves the page changed: run it last.
AXE_RUN = """async ({tags, colours_only}) => {
  const key = el => {
    const s = getComputedStyle(el);
    const parts = [s.color, s.fontSize, s.fontWeight, s.textShadow, s.opacity];
    for (let a = el.parentElement; a; a = a.parentElement) {
      const t = getComputedStyle(a);
      parts.push(t.backgroundColor, t.backgroundImage, t.opacity);
    }
    return parts.join('|');
  };
  const seen = new Set(), same = [];
  let code = 0;
  for (const el of document.querySelectorAll('.highlight pre, .highlight pre *')) {
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.data.trim())) continue;
    code += 1;
    const k = key(el);
    if (!seen.has(k)) seen.add(k);
    else if (el.tagName === 'SPAN' && !el.children.length && !el.closest('a, button'))
      same.push(el);
  }
  const blocks = new Set(same.map(el => el.parentElement));
  for (const el of same) el.replaceWith(el.textContent);
  for (const b of blocks) b.normalize();
  const colours = axe.getRules(tags).filter(r => r.tags.includes('cat.color')).map(r => r.ruleId);
  let found = [];
  if (!colours_only) {
    const off = Object.fromEntries(colours.map(id => [id, {enabled: false}]));
    found = (await axe.run(document, {runOnly: {type: 'tag', values: tags}, rules: off})).violations;
  }
  for (const m of document.querySelectorAll('mjx-container')) m.style.visibility = 'hidden';
  found = found.concat((await axe.run(document, {runOnly: {type: 'rule', values: colours}})).violations);
  const violations = found.map(v => ({id: v.id,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}));
  return {violations, code, samples: code - same.length};
}"""
PHONE, DESKTOP = (390, 844), (1280, 900)
SCHEMES = ("light", "dark")
VIEWS = [(*size, scheme) for scheme in SCHEMES for size in (PHONE, DESKTOP)]
LAYOUT = """() => {
  const de = document.documentElement, main = document.querySelector('main') || document.body;
  const out = {overflow: Math.max(de.scrollWidth, document.body.scrollWidth) - de.clientWidth,
               equations: [], code: [], captions: [], brackets: []};
  for (const m of main.querySelectorAll('mjx-container[display="true"]')) {
    const inner = m.firstElementChild, box = m.closest('div.math') || m.parentElement;
    const need = Math.max(m.scrollWidth, inner ? inner.getBoundingClientRect().width : 0);
    const right = main.getBoundingClientRect().right + 1;
    if (need <= m.clientWidth + 1 && box.getBoundingClientRect().right <= right) continue;
    const s = getComputedStyle(m);
    const scrolls = s.overflowX === 'auto' || s.overflowX === 'scroll';
    const cue = s.backgroundImage.includes('gradient') && m.offsetHeight - m.clientHeight > 0;
    if (!(scrolls && cue)) out.equations.push((box.id || 'equation') + ' needs ' + Math.round(need) +
                                              ' px, has ' + m.clientWidth);
  }
  if (window.innerWidth >= 1200)
    for (const pre of main.querySelectorAll('pre'))
      if (pre.scrollWidth > pre.clientWidth + 1)
        out.code.push(pre.innerText.split('\\n')[0].slice(0, 60) + ' (' + (pre.scrollWidth - pre.clientWidth) + ' px)');
  for (const c of main.querySelectorAll('figcaption, caption, .caption')) {
    const copy = c.cloneNode(true);
    copy.querySelectorAll('mjx-container, script').forEach(e => e.remove());
    out.captions.push(copy.innerText);
  }
  const copy = main.cloneNode(true);
  copy.querySelectorAll('pre, mjx-container, script').forEach(e => e.remove());
  out.brackets = copy.innerText.match(/.{0,30}\\(\\([0-9.]+\\)\\).{0,10}/g) || [];
  return out;
}"""


def pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html")
                  if "_static" not in p.parts and "_sources" not in p.parts
                  and p.name not in SKIP_PAGES)


def test_internal_links_and_anchors_resolve(built_book):
    from bs4 import BeautifulSoup

    ids: dict[Path, set[str]] = {}

    def anchors(path: Path) -> set[str]:
        if path not in ids:
            soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            ids[path] = {t["id"] for t in soup.find_all(id=True)}
        return ids[path]

    broken = []
    for page in pages(built_book):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for a in soup.find_all("a", href=True):
            url = urlparse(a["href"])
            if url.scheme or a["href"].startswith("//") or a["href"].startswith("mailto:"):
                continue
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(built_book)} -> {a['href']}")
            elif url.fragment and target.suffix == ".html" and url.fragment not in anchors(target):
                broken.append(f"{page.relative_to(built_book)} -> {a['href']} (no such anchor)")
    assert not broken, "\n".join(broken)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run "
                    "installs it when run as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # scrollbars shown, as a desktop browser shows them (playwright hides them by default)
        b = p.chromium.launch(executable_path=CHROMIUM, ignore_default_args=["--hide-scrollbars"],
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                    "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield b
        b.close()


def open_page(browser, path: Path, width: int = 1280, height: int = 900,
              color_scheme: str = "light"):
    """Open a page; return (page, console errors, requests to other hosts)."""
    context = browser.new_context(viewport={"width": width, "height": height},
                                  color_scheme=color_scheme)
    page = context.new_page()
    errors, foreign = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: foreign.append(r.url)
            if not r.url.startswith(("file:", "data:", "blob:", "about:")) else None)
    page.goto(path.as_uri(), wait_until="load")
    # MathJax typesets asynchronously: wait for its startup promise when the page loads it.
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    settle(page)
    return page, errors, foreign


def settle(page) -> None:
    """Wait until every finite CSS transition and animation has finished. The theme's buttons
    fade their colours in (0.15 s) when the page first styles them: measured before the end,
    a colour is between black and its final value, and how far it got depends on the
    machine's load. Endless animations (spinners) are not waited for."""
    page.evaluate("""() => Promise.all(document.getAnimations()
        .filter(a => Number.isFinite(a.effect?.getComputedTiming().endTime))
        .map(a => a.finished.catch(() => null)))""")


PAGE_FACTS = """() => {
  const c = document.querySelector('main') || document.body, copy = c.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, mjx-container, .highlight')
    .forEach(e => e.remove());
  return {theme: document.documentElement.dataset.theme,
          math: document.querySelectorAll('.math').length,
          typeset: document.querySelectorAll('mjx-container').length,
          text: copy.innerText,
          images: Array.from(document.querySelectorAll('main img')).map(
            i => ({src: i.getAttribute('src'), w: i.naturalWidth, alt: i.getAttribute('alt')})),
          downloads: Array.from(document.querySelectorAll('.dropdown-download-buttons a'))
            .map(a => a.getAttribute('href')),
          launches: Array.from(document.querySelectorAll('.dropdown-launch-buttons a'))
            .map(a => a.innerText.trim()),
          shown: (() => {  // the elements shown, by tag in document order: [count, hash]
            let n = 0, h = 0;
            for (const e of document.body.querySelectorAll('*')) {
              if (!e.checkVisibility()) continue;
              n += 1;
              for (const ch of e.tagName + '|') h = (h * 31 + ch.charCodeAt(0)) | 0;
            }
            return [n, h];
          })()};
}"""


@pytest.fixture(scope="module")
def views(built_book, browser) -> dict[tuple[str, int, str], dict]:
    """Every page in each of :data:`VIEWS`, as a reader's browser shows it: {(page, width,
    scheme): what the page tests below assert on}: console errors, requests to other hosts,
    the facts of :data:`PAGE_FACTS`, :data:`LAYOUT`'s findings and, at 1280 px, axe-core's
    violations. A screenshot of each view goes to _build/screenshots/<page>-<width>-<scheme>.png.

    A page is opened once per scheme, at the phone's width, and then widened to the
    desktop's, as a reader widens a window: every fact is the same as in a page opened at
    that width (test_a_widened_page_is_a_page_opened_wide), at half the cost. axe-core runs
    all its rules in the light scheme and, in the dark one, the rules that read colours
    (the others read the page's structure, which the scheme does not change)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    seen = {}
    for path in pages(built_book):
        name = str(path.relative_to(built_book))
        for scheme in SCHEMES:
            page, errors, foreign = open_page(browser, path, *PHONE, scheme)
            for width, height in (PHONE, DESKTOP):
                if width != PHONE[0]:
                    page.set_viewport_size({"width": width, "height": height})
                    settle(page)
                facts = view_facts(page, errors, foreign)
                stem = name.removesuffix(".html").replace("/", "_")
                facts["screenshot"] = SCREENSHOTS / f"{stem}-{width}-{scheme}.png"
                page.screenshot(path=str(facts["screenshot"]), full_page=False)
                if width == DESKTOP[0] and AXE.is_file():  # the rules do not depend on the width
                    facts["axe"] = axe_violations(page, AXE, colours_only=scheme != "light")
                seen[name, width, scheme] = facts
            page.context.close()
    return seen


# Where the page's blocks lie: the viewport, the main column, each display equation's and
# each code block's box and scroll width, and which of the theme's sidebars show.
GEOMETRY = """() => {
  const box = e => { const r = e.getBoundingClientRect();
    return [Math.round(r.left), Math.round(r.width), e.scrollWidth]; };
  const main = document.querySelector('main') || document.body;
  return {viewport: [innerWidth, document.documentElement.clientWidth], main: box(main),
          equations: [...main.querySelectorAll('mjx-container[display="true"]')].map(box),
          code: [...main.querySelectorAll('div.highlight pre')].map(box),
          sidebars: [...document.querySelectorAll('.bd-sidebar-primary, .bd-sidebar-secondary')]
            .map(e => getComputedStyle(e).display)};
}"""


def view_facts(page, errors: list, foreign: list) -> dict:
    """:data:`PAGE_FACTS`, :data:`LAYOUT` and :data:`GEOMETRY` of an open page, with copies
    of its console errors and requests to other hosts so far (axe's own requests for the
    style sheets, blocked from file: pages, are not the page's)."""
    facts = page.evaluate(PAGE_FACTS)
    facts.update(errors=list(errors), foreign=list(foreign), layout=page.evaluate(LAYOUT),
                 geometry=page.evaluate(GEOMETRY))
    return facts


def test_a_widened_page_is_a_page_opened_wide(built_book, browser, views):
    """The ``views`` fixture widens each page from 390 to 1280 px rather than opening it
    again: on the chapter with the widest equations and the most code, in both schemes,
    every fact it records, where each block lies included, equals that of the page opened
    at 1280 px."""
    name = "chapters/03_why_sqrt_dk.html"
    for scheme in SCHEMES:
        page, errors, foreign = open_page(browser, built_book / name, *DESKTOP, scheme)
        fresh = view_facts(page, errors, foreign)
        page.context.close()
        widened = {k: v for k, v in views[name, DESKTOP[0], scheme].items()
                   if k not in ("screenshot", "axe")}
        assert fresh == widened, scheme


def test_every_page_in_a_browser(views):
    """No console error and no request to another host in any view; formulas typeset by
    MathJax, no raw TeX; images load and have alt text."""
    problems = []
    for (name, width, scheme), f in views.items():
        where = f"{name} at {width} px {scheme}"
        if f["errors"]:
            problems.append(f"{where}: console errors {f['errors'][:3]}")
        if f["foreign"]:
            problems.append(f"{where}: requests to other hosts {f['foreign'][:3]}")
        if f["math"] and not f["typeset"]:
            problems.append(f"{where}: {f['math']} formulas but nothing typeset by MathJax")
        raw = RAW_MATH.findall(f["text"])
        if raw:
            problems.append(f"{where}: untypeset mathematics {raw[:3]}")
        for img in f["images"]:
            if not img["w"]:
                problems.append(f"{where}: image {img['src']} did not load")
            if not (img["alt"] or "").strip():
                problems.append(f"{where}: image {img['src']} has no alt text")
    assert len(views) == len(VIEWS) * len({name for name, _, _ in views}) > 0
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def axe_script() -> Path:
    if not AXE.is_file():
        pytest.skip("axe-core is not installed (npm ci installs node_modules/axe-core, "
                    "pinned in package.json; make book and make test run it)")
    return AXE


def axe_violations(page, script: Path, colours_only: bool = False) -> list[dict]:
    """Run axe-core's WCAG 2.0/2.1 A and AA rules on an open page (:data:`AXE_RUN`: one
    element of each style of its highlighted code); return its violations. With
    ``colours_only``, only the rules that read colours. The page is changed: run it last."""
    page.add_script_tag(path=str(script))
    return page.evaluate(AXE_RUN, {"tags": AXE_TAGS, "colours_only": colours_only})["violations"]


def test_the_dark_scheme_shows_the_elements_the_light_one_shows(views):
    """The views fixture runs axe-core's rules that read the page's structure in the light
    scheme only: that holds while the dark scheme shows the same elements (an image shown in
    one scheme only, say, would be checked in neither)."""
    differ = [(name, width) for (name, width, scheme), f in views.items() if scheme == "dark"
              and f["shown"] != views[name, width, "light"]["shown"]]
    assert all(f["shown"][0] > 50 for f in views.values())
    assert not differ, f"the dark scheme shows other elements than the light one: {differ}"


def test_axe_finds_no_wcag_violation_in_light_or_dark(views, axe_script):
    """axe-core (WCAG 2.0 and 2.1, levels A and AA) on every page, after MathJax has typeset
    it, in the light colour scheme, and its rules that read colours in the dark one: no
    violation. Each one is listed with its
    rule and up to three of its elements, with axe's summary of what fails."""
    problems = []
    checked = {(name, scheme) for (name, _, scheme), f in views.items() if "axe" in f}
    assert checked == {(name, scheme) for name, _, scheme in views}, "a page or scheme unchecked"
    for (name, width, scheme), f in views.items():
        assert f["theme"] == scheme, (name, width, scheme, f["theme"])
        for v in f.get("axe", []):
            problems.append(f"{name} ({scheme}): {v['id']}, {len(v['nodes'])} element(s)")
            problems += [f"    {n['target']}: {' '.join((n['summary'] or '').split())}"
                         for n in v["nodes"][:3]]
    assert not problems, "\n".join(problems)


CODE_PAGE = """<!doctype html><html lang="en"><head><title>code</title><style>
.highlight {{ background: #ffffff; }} .note {{ background: #ffffe0; }}
.k {{ color: #0000aa; }} .pale {{ color: #b8b8b8; }}
</style></head><body><main><h1>Code</h1>
<div class="highlight"><pre>{tokens}<span class="{last}">late</span></pre></div>
<div class="note"><div class="highlight"><pre><span class="k">if</span></pre></div></div>
</main></body></html>"""


@pytest.mark.parametrize("last, found, colours_only",
                         [("k", 0, False), ("pale", 1, False), ("pale", 1, True)])
def test_axe_samples_code_but_finds_one_low_contrast_token(browser, axe_script, tmp_path,
                                                          last, found, colours_only):
    """:data:`AXE_RUN` checks one token element per style and background: the 400th token
    of a code block, its only one in a pale grey, is a colour-contrast violation; the same
    token in the block's own colour is none, and the 400 tokens of one style are checked
    as one sample (and the token on another background as another)."""
    page_file = tmp_path / "code.html"
    page_file.write_text(CODE_PAGE.format(tokens='<span class="k">def</span> ' * 400, last=last))
    page, _, _ = open_page(browser, page_file)
    page.add_script_tag(path=str(axe_script))
    result = page.evaluate(AXE_RUN, {"tags": AXE_TAGS, "colours_only": colours_only})
    page.context.close()
    assert result["code"] == 402 and result["samples"] == 2 + found, result
    contrast = [v for v in result["violations"] if v["id"] == "color-contrast"]
    assert [n["target"] for v in contrast for n in v["nodes"]] == [".pale"] * found, result


MATH_PAGE = """<!doctype html><html lang="en"><head><title>math</title><style>
.pale {{ color: #b8b8b8; }}</style></head><body><main><h1>Math</h1>
<p>Text <mjx-container class="MathJax" jax="CHTML">{inside}</mjx-container>.</p>
<p class="{last}">after the formula</p></main></body></html>"""


def test_axe_hides_formulas_from_the_colour_rules_only(browser, axe_script, tmp_path):
    """:data:`AXE_RUN` hides MathJax's formulas while the colour rules run, not while the
    others do: an image without a text alternative inside a formula is still found, and
    so is a pale paragraph after it."""
    found = []
    for inside, last in (('<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">', "plain"),
                         ("x", "pale")):
        page_file = tmp_path / "math.html"
        page_file.write_text(MATH_PAGE.format(inside=inside, last=last))
        page, _, _ = open_page(browser, page_file)
        page.add_script_tag(path=str(axe_script))
        result = page.evaluate(AXE_RUN, {"tags": AXE_TAGS, "colours_only": False})
        page.context.close()
        found.append(sorted(v["id"] for v in result["violations"]))
    assert found == [["image-alt"], ["color-contrast"]], found


def test_chapters_and_exercises_have_download_and_launch_buttons(built_book, views):
    targets = [str(p.relative_to(built_book)) for p in
               sorted((built_book / "chapters").glob("*.html")) +
               sorted((built_book / "exercises").rglob("*.html"))]
    assert targets
    for name in targets:
        f = views[name, 1280, "light"]
        downloads, launches = f["downloads"], f["launches"]
        assert any(h and h.endswith(".ipynb") for h in downloads), (name, downloads)
        for service in ("Binder", "Colab"):
            assert any(service in t for t in launches), (name, service, launches)
        # no button to a placeholder host: JupyterHub appears only when _config.yml names one
        assert not any("JupyterHub" in t for t in launches), (name, launches)


class _JsonNotebooks(http.server.SimpleHTTPRequestHandler):
    """The built site as a server that sends .ipynb as application/json (GitHub Pages and
    many others do): a plain link to one opens a tab of JSON."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".ipynb": "application/json"}

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def json_site(built_book):
    """The built site on http://127.0.0.1:<port>/, .ipynb sent as application/json."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_JsonNotebooks, directory=str(built_book)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


DOWNLOAD_PAGES = ["chapters/02_scaled_dot_product_attention.html",
                  "exercises/ex01_python_attention/ex01_python_attention.html"]


def _save_notebook(browser, url: str, built_book: Path) -> tuple[str, bytes, str, list, list]:
    """Open ``url``, click the download menu's .ipynb item; return (the download's file
    name, its bytes, the built file the item links to, console errors, aborted requests)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    aborted, errors = [], []

    def route(r):  # nothing leaves 127.0.0.1 (or the file system)
        if r.request.url.startswith(("file:", "data:", "blob:")) or \
                urlparse(r.request.url).hostname == "127.0.0.1":
            r.continue_()
        else:
            aborted.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="load")
    item = page.locator(".dropdown-download-buttons a", has_text=".ipynb")
    href = item.get_attribute("href")
    page.locator(".dropdown-download-buttons button.dropdown-toggle").click()
    with page.expect_download(timeout=30_000) as info:
        item.click()
    download = info.value
    data = Path(download.path()).read_bytes()
    tabs = len(context.pages)
    name = download.suggested_filename
    context.close()
    assert tabs == 1, f"{url}: the click opened {tabs - 1} more tab(s)"
    return name, data, href, errors, aborted


@pytest.mark.parametrize("page_path", DOWNLOAD_PAGES)
def test_the_ipynb_item_saves_the_notebook_from_a_json_server(built_book, browser, json_site,
                                                              page_path):
    import urllib.request

    source = json_site + "_sources/" + page_path.removesuffix(".html") + ".ipynb"
    with urllib.request.urlopen(source) as r:  # the server this test is about
        assert r.headers["Content-Type"] == "application/json", r.headers["Content-Type"]
    name, data, href, errors, aborted = _save_notebook(browser, json_site + page_path, built_book)
    built = (built_book / page_path).parent / href
    assert name == built.name == Path(page_path).with_suffix(".ipynb").name, (name, href)
    assert data == built.read_bytes(), (len(data), built.stat().st_size)
    assert not errors and not aborted, (errors, aborted)


@pytest.mark.parametrize("page_path", DOWNLOAD_PAGES)
def test_the_ipynb_item_saves_the_notebook_from_a_file_page(built_book, browser, page_path):
    name, data, href, errors, aborted = _save_notebook(
        browser, (built_book / page_path).as_uri(), built_book)
    built = (built_book / page_path).parent / href
    assert name == built.name == Path(page_path).with_suffix(".ipynb").name, (name, href)
    assert data == built.read_bytes(), (len(data), built.stat().st_size)
    assert not errors and not aborted, (errors, aborted)


def test_colab_opens_a_notebook(built_book):
    """Colab opens the chapter's notebook that the site build writes to _sources/ (published
    with the site on the gh-pages branch by `make publish`), in the repository _config.yml
    names."""
    import yaml

    repo = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    slug = urlparse(repo).path.strip("/")
    html = (built_book / "chapters" / "02_scaled_dot_product_attention.html").read_text()
    colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html)
    assert colab, "no Colab link"
    for url in colab:
        assert url == (f"https://colab.research.google.com/github/{slug}/blob/gh-pages/"
                       "_sources/chapters/02_scaled_dot_product_attention.ipynb"), url
    assert (built_book / "_sources" / "chapters" / "02_scaled_dot_product_attention.ipynb").is_file()


def test_search_finds_softmax(built_book, browser):
    page, errors, foreign = open_page(browser, built_book / "search.html")
    page.goto((built_book / "search.html").as_uri() + "?q=softmax")
    page.wait_for_selector("#search-results ul li", timeout=30000)
    hits = page.evaluate("() => document.querySelectorAll('#search-results ul li').length")
    page.context.close()
    assert hits >= 2 and not foreign


def test_screenshots(built_book, browser):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shots = {"home": built_book / "intro.html"}
    sqrt_chapter = sorted((built_book / "chapters").glob("03_*.html"))
    shots["why-sqrt-dk"] = sqrt_chapter[0] if sqrt_chapter else \
        built_book / "chapters" / "02_scaled_dot_product_attention.html"
    sizes = {"desktop": (1280, 900, "light"), "phone": (390, 844, "light"),
             "desktop-dark": (1280, 900, "dark")}
    for name, path in shots.items():
        for label, (w, h, scheme) in sizes.items():
            page, errors, _ = open_page(browser, path, w, h, scheme)
            if scheme == "dark":  # the theme follows the reader's system setting
                assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
                page.evaluate("() => document.querySelector('img.figure, main img, figure img')"
                              "?.scrollIntoView()")
            out = SCREENSHOTS / f"{name}-{label}.png"
            page.screenshot(path=str(out), full_page=False)
            page.context.close()
            assert out.stat().st_size > 10_000, out
            assert not errors, (name, label, errors)


def test_layout_on_every_page_at_phone_and_desktop_width(views):
    """390 px and 1280 px, light and dark: no sideways page scroll; display equations that do
    not fit scroll with a visible cue (shadow and scrollbar); code fits the column at 1280 px;
    no raw labels or ASCII stand-ins in captions, no doubled brackets around equation
    numbers. Screenshots of every page go to _build/screenshots/<page>-<width>-<scheme>.png."""
    problems = []
    for (name, width, scheme), f in views.items():
        where, r = f"{name} at {width} px {scheme}", f["layout"]
        if r["overflow"] > 0:
            problems.append(f"{where}: the page scrolls sideways by {r['overflow']} px")
        problems += [f"{where}: display equation cut off without a scroll cue: {e}"
                     for e in r["equations"]]
        problems += [f"{where}: code block wider than the column: {c}" for c in r["code"]]
        problems += [f"{where}: raw label in caption: {c.strip()[:100]}"
                     for c in r["captions"] if RAW_LABEL.search(c)]
        problems += [f"{where}: doubled brackets: {b}" for b in r["brackets"]]
        assert f["screenshot"].stat().st_size > 5_000, f["screenshot"]
    assert {width for _, width, _ in views} == {390, 1280}
    assert not problems, "\n".join(problems)


def test_icons_are_served_from_subset_fonts(built_book):
    """The 1.5 MB icon script is gone and the icon fonts hold only the glyphs in use."""
    static = built_book / "_static"
    assert (static / "scripts" / "fontawesome.js").stat().st_size < 1_000
    fonts = sorted((static / "vendor" / "fontawesome" / "webfonts").iterdir())
    assert fonts and all(f.suffix == ".woff" and f.stat().st_size < 20_000 for f in fonts), fonts
    css = (static / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    assert ".woff2" not in css and "fa-solid-900.woff" in css


def test_learners_path(built_book):
    """The home page's "get the course" box; every exercise page names the chapter it
    practises and links back to it; knowledge checks are "Check N.M", not "Exercise N.M"; the
    navigation starts with the page the home page says to start with."""
    from bs4 import BeautifulSoup

    intro = BeautifulSoup((built_book / "intro.html").read_text(encoding="utf-8"), "html.parser")
    box = intro.find(id="get-the-course")
    assert box is not None and "make venv" in box.get_text() and "autograder check" in box.get_text()
    nav = [a.get_text(strip=True) for a in intro.select("nav.bd-links a.reference")]
    first_chapter = next(i for i, t in enumerate(nav) if t.startswith("1. "))
    assert any(t.startswith("How to use this course") for t in nav[:first_chapter]), nav[:4]
    for page in sorted((built_book / "exercises").rglob("*.html")):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        box = soup.select_one("div.course-path")
        assert box is not None and re.search(r"Prerequisite: chapter \d, ", box.get_text()), page.name
        link = box.find("a", href=True)
        assert link and "chapters/" in link["href"], (page.name, link)
        assert f"autograder check exercises/{page.parent.name}/{page.stem}.ipynb" in box.get_text()
    for page in sorted((built_book / "chapters").glob("*.html")):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        titles = [t.get_text(" ", strip=True) for t in soup.select("div.exercise p.admonition-title")]
        assert all(t.startswith("Check ") for t in titles), (page.name, titles[:3])


def test_every_reference_has_a_doi_or_link():
    import re as _re

    bib = (REPO / "references.bib").read_text(encoding="utf-8")
    entries = _re.findall(r"@\w+\{([^,]+),(.*?)\n\}", bib, _re.S)
    assert entries
    missing = [key for key, body in entries if not _re.search(r"^\s*(doi|url)\s*=", body, _re.M)]
    assert not missing, missing
