"""The website as a reader meets it: in a real browser (headless Chromium), offline.

Every page opens from _build/html with no console error and no request to any other host;
mathematics is typeset by the MathJax served from the site; images load and carry alt
text; chapters and exercises have download and launch buttons; search finds "softmax";
internal links and anchors resolve. Screenshots go to _build/screenshots/.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from conftest import REPO

pytestmark = [pytest.mark.book, pytest.mark.xdist_group("book")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = REPO / "_build" / "screenshots"
SKIP_PAGES = {"genindex.html", "search.html", "index.html"}  # index.html only redirects
RAW_MATH = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^\s$][^$\n]*\$")


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
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
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
    return page, errors, foreign


def test_every_page_in_a_browser(built_book, browser):
    problems = []
    for path in pages(built_book):
        name = str(path.relative_to(built_book))
        page, errors, foreign = open_page(browser, path)
        if errors:
            problems.append(f"{name}: console errors {errors[:3]}")
        if foreign:
            problems.append(f"{name}: requests to other hosts {foreign[:3]}")
        has_math = page.evaluate("() => document.querySelectorAll('.math').length")
        typeset = page.evaluate("() => document.querySelectorAll('mjx-container').length")
        if has_math and not typeset:
            problems.append(f"{name}: {has_math} formulas but nothing typeset by MathJax")
        text = page.evaluate("""() => { const c = document.querySelector('main') ||
            document.body; const copy = c.cloneNode(true);
            copy.querySelectorAll('pre, code, script, style, mjx-container, .highlight')
                .forEach(e => e.remove()); return copy.innerText; }""")
        raw = RAW_MATH.findall(text)
        if raw:
            problems.append(f"{name}: untypeset mathematics {raw[:3]}")
        images = page.evaluate("""() => Array.from(document.querySelectorAll('main img')).map(
            i => ({src: i.getAttribute('src'), w: i.naturalWidth, alt: i.getAttribute('alt')}))""")
        for img in images:
            if not img["w"]:
                problems.append(f"{name}: image {img['src']} did not load")
            if not (img["alt"] or "").strip():
                problems.append(f"{name}: image {img['src']} has no alt text")
        page.context.close()
    assert not problems, "\n".join(problems)


def test_chapters_and_exercises_have_download_and_launch_buttons(built_book, browser):
    targets = sorted((built_book / "chapters").glob("*.html")) + \
        sorted((built_book / "exercises").rglob("*.html"))
    assert targets
    for path in targets:
        page, _, _ = open_page(browser, path)
        downloads = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.dropdown-download-buttons a')).map(a => a.getAttribute('href'))""")
        launches = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.dropdown-launch-buttons a')).map(a => a.innerText.trim())""")
        page.context.close()
        assert any(h and h.endswith(".ipynb") for h in downloads), (path.name, downloads)
        for service in ("Binder", "JupyterHub", "Colab"):
            assert any(service in t for t in launches), (path.name, service, launches)


def test_colab_opens_a_notebook(built_book):
    html = (built_book / "chapters" / "02_scaled_dot_product_attention.html").read_text()
    colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html)
    assert colab and all(u.endswith(".ipynb") for u in colab), colab


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
