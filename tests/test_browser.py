"""The lesson site in a real browser: Debian's Chromium, driven by Playwright, on the built site
served from 127.0.0.1. Every page loads without console errors, its links and images resolve,
its headings descend without skipping a level, no figure is shown twice, no output needs
scrolling sideways at 1280 px, and axe-core finds no serious accessibility problem; the sidebar
follows the schedule; solutions open on click; the copy button copies; the search finds HDF5.
Screenshots of the landing page and episode 5 are saved to _build/test-artifacts/.

No browser is downloaded (test machines have no internet): the tests drive the Chromium that
tools/ensure_chromium.sh installs with apt-get (or LESSON_CHROMIUM=/path), and skip, saying how
to enable them, when there is none.
"""

import functools
import http.server
import re
import sys
import threading
from urllib.parse import urldefrag, urlsplit

import pytest
import yaml
from carpentry import schedule_parts
from conftest import ROOT
from localhost import chromium_path

ENABLE = ("browser tests need Chromium: apt-get install chromium (or set LESSON_CHROMIUM=/path), "
          "and the playwright package (pip install -r requirements/dev.txt)")
ARTIFACTS = ROOT / "_build" / "test-artifacts"
TIMEOUT_MS = 15_000
# axe-core, the accessibility engine, kept in the repository (tests/vendor/axe-core/README.md).
AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
AXE_VERSION = "4.14.1"


def toc_pages() -> list[str]:
    """Every page of the table of contents, as a path relative to the site root ('x/y.html')."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names = [toc["root"]] + [ch["file"] for part in toc.get("parts", []) for ch in part["chapters"]]
    return [name.removesuffix(".md") + ".html" for name in names]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # The browser may close a connection before a response is sent (a page left early):
        # not an error of the site, and not worth a traceback in the test log.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def site(built_site):
    html, result = built_site
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return html


@pytest.fixture(scope="module")
def base_url(site):
    """The built site served over HTTP on 127.0.0.1 (a free port) for the module's tests."""
    server = _Server(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def browser():
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(ENABLE + " [the playwright package is not installed]")
    if executable is None:
        pytest.skip(ENABLE + " [no Chromium found]")
    with sync_playwright() as pw:
        # --no-sandbox: CI runs the tests as root, where Chromium's sandbox refuses to start.
        chromium = pw.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, base_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    yield tab
    context.close()


# What one visit to each page of the table of contents saw; the tests below judge it.
# ``wide``: the output blocks (recorded outputs, printed text) whose content is wider than the
# block, so that a reader would have to scroll sideways: the block's place and its widest line.
_COLLECT = """() => {
  const headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .filter(h => !h.closest('.d-print-block, .onlyprint'))
    .map(h => [Number(h.tagName[1]), h.textContent.trim().slice(0, 60),
               Boolean(h.closest('article.bd-article'))]);
  const section = e => (e.closest('section[id]') || {}).id || '(top)';
  const wide = [...document.querySelectorAll('.cell_output, .cell_output div.output, .cell_output pre')]
    .filter(e => e.scrollWidth > e.clientWidth)
    .map(e => `block ${e.tagName.toLowerCase()}.${[...e.classList].join('.')} in section #${section(e)}`
              + ` (${e.scrollWidth} px of content in ${e.clientWidth} px): `
              + JSON.stringify(e.innerText.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '')
                               .slice(0, 100)));
  return {
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    images: [...document.querySelectorAll('img[src]')].map(i => i.src),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    headings: headings,
    wide: wide,
  };
}"""

# axe-core's findings on the page: each violated rule, its impact and the elements it names.
_AXE = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
    .map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => n.target.join(' '))}))"""


def theme_exceptions() -> dict[str, str]:
    """{axe rule id: CSS selector of the theme's elements} that CONTRIBUTING.md lists as
    problems of the theme that the lesson cannot fix (its table under "Accessibility")."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("### Accessibility problems of the theme", 1)[1].split("\n#", 1)[0]
    return {rule: selector for rule, selector in
            re.findall(r"^\| `([a-z-]+)` \| `([^`]+)` \|", section, flags=re.MULTILINE)}


@pytest.fixture(scope="module")
def visits(browser, base_url):
    """Load every page of the table of contents once, in a window 1280 px wide: its console
    errors, what it holds, and what axe-core finds in it."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    errors: list[str] = []

    def on_console(msg):
        if msg.type == "error":
            errors.append(f"console.error: {msg.text}")

    tab.on("console", on_console)
    tab.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    seen = {}
    for name in toc_pages():
        errors.clear()
        response = tab.goto(base_url + name, wait_until="load")
        tab.wait_for_load_state("networkidle")
        seen[name] = dict(tab.evaluate(_COLLECT), status=response.status, errors=list(errors))
        tab.add_script_tag(path=str(AXE))
        seen[name]["axe"] = tab.evaluate(_AXE)
    context.close()
    return seen


def test_every_page_loads_without_console_errors(visits):
    bad = {name: v["errors"] for name, v in visits.items() if v["status"] != 200 or v["errors"]}
    assert not bad, "\n".join(f"{name}: {errs}" for name, errs in bad.items())


def test_internal_links_and_images_resolve(visits, base_url, browser):
    """Every same-origin link and image answers 200; a link's #fragment names an id there."""
    context = browser.new_context()
    status: dict[str, int] = {}
    broken = []
    ids = {base_url + name: set(v["ids"]) for name, v in visits.items()}
    for name, v in visits.items():
        for kind, refs in (("link", v["links"]), ("image", v["images"])):
            for ref in refs:
                url, fragment = urldefrag(ref)
                if not url.startswith(base_url):
                    continue  # external: not checked offline
                if url not in status:
                    status[url] = context.request.get(url).status
                if status[url] != 200:
                    broken.append(f"{name}: {kind} {ref} -> HTTP {status[url]}")
                elif kind == "link" and fragment and url in ids and fragment not in ids[url]:
                    broken.append(f"{name}: link {ref} -> no element with id {fragment!r}")
    context.close()
    assert len(status) > len(visits), "too few internal links were found: is the page empty?"
    assert not broken, "\n".join(broken)


def test_headings_descend_without_skipping_a_level(visits):
    """In the article (the page's own content) there is one h1, and no heading is more than
    one level below the one before it (h2 -> h4 skips h3). The theme's chrome around it is
    left out: its print-only title repeats the h1 and its 'Contents' box is an h2."""
    problems = []
    for name, v in visits.items():
        levels = [(level, text) for level, text, in_article in v["headings"] if in_article]
        if [level for level, _ in levels].count(1) != 1:
            problems.append(f"{name}: {[level for level, _ in levels].count(1)} h1 headings")
        for (before, _), (level, text) in zip([(1, "")] + levels, levels):
            if level > before + 1:
                problems.append(f"{name}: h{before} -> h{level} ({text!r})")
        if levels and levels[0][0] != 1:
            problems.append(f"{name}: first heading is h{levels[0][0]}, not h1")
    assert not problems, "\n".join(problems)


def test_no_output_needs_scrolling_sideways(visits):
    """In a window 1280 px wide, every output block (the recorded outputs under the code cells)
    holds its text: long lines wrap, wide printed tables shrink to fit (_static/lesson.css,
    _ext/recorded.py), so the numbers in them are seen without scrolling."""
    wide = [f"{name}: {block}" for name, v in visits.items() for block in v["wide"]]
    assert not wide, "output blocks that need scrolling sideways:\n" + "\n".join(wide)


def test_no_figure_is_shown_twice_on_a_page(visits):
    repeated = {name: sorted({src for src in v["images"] if v["images"].count(src) > 1})
                for name, v in visits.items()}
    repeated = {name: srcs for name, srcs in repeated.items() if srcs}
    assert not repeated, repeated


def test_axe_finds_no_serious_accessibility_problem(visits):
    """axe-core on every page: no critical or serious violation, except those that
    CONTRIBUTING.md lists as the theme's, on the theme's elements named there."""
    assert AXE.read_text(encoding="utf-8", errors="replace")[:40].startswith(f"/*! axe v{AXE_VERSION}")
    allowed = theme_exceptions()
    problems = []
    for name, v in visits.items():
        for found in v["axe"]:
            if found["impact"] not in ("critical", "serious"):
                continue
            theirs = found["id"] in allowed and all(
                allowed[found["id"]] in node for node in found["nodes"])
            if not theirs:
                problems.append(f"{name}: {found['id']} ({found['impact']}: {found['help']}) "
                                f"on {found['nodes'][:5]}")
    assert not problems, "\n".join(problems)


def test_sidebar_lists_the_episodes_in_schedule_order(page, base_url):
    page.goto(base_url + "index.html")
    parts = schedule_parts(ROOT)
    sidebar = page.evaluate("""(captions) => captions.flatMap(name => {
      const caption = [...document.querySelectorAll('nav.bd-links p.caption')]
        .find(p => p.textContent.trim() === name);
      return [...caption.nextElementSibling.querySelectorAll(':scope > li > a')].map(a => a.href);
    })""", [part.caption for part in parts])
    schedule = page.evaluate("""() => [...document.querySelectorAll('table tbody tr')]
        .map(tr => tr.querySelector('a.reference.internal'))
        .filter(a => a && a.href.includes('/_episodes/')).map(a => a.href)""")
    expected = [base_url + ep.docname + ".html" for part in parts for ep in part.episodes]
    assert schedule == expected, "the schedule table does not list the episodes in teaching order"
    assert sidebar == schedule


def test_solutions_start_collapsed_and_open_on_click(page, base_url):
    page.goto(base_url + "_episodes/05-cpu-vs-gpu.html")
    solutions = page.locator(".admonition.solution")
    assert solutions.count() > 0
    # Wait for sphinx-togglebutton to have turned every solution into a collapsed dropdown.
    page.wait_for_selector(".admonition.solution button.toggle-button")
    for i in range(solutions.count()):
        body = solutions.nth(i).locator(":scope > :not(.admonition-title)").first
        assert body.is_hidden(), f"solution {i} is visible before it is opened"
    first = solutions.first
    body = first.locator(":scope > :not(.admonition-title)").first
    first.locator(".admonition-title").click()
    body.wait_for(state="visible")
    assert first.locator("button.toggle-button").get_attribute("aria-expanded") == "true"
    assert solutions.nth(1).locator(":scope > :not(.admonition-title)").first.is_hidden()
    first.locator(".admonition-title").click()
    body.wait_for(state="hidden")


def test_copy_button_copies_the_code(browser, base_url):
    context = browser.new_context()
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url.rstrip("/"))
    tab = context.new_page()
    tab.goto(base_url + "_episodes/05-cpu-vs-gpu.html")
    block = tab.locator("div.highlight:has(button.copybtn)").first
    block.hover()
    button = block.locator("button.copybtn")
    target = button.get_attribute("data-clipboard-target")
    code = tab.locator(target).inner_text()
    assert "import" in code
    button.click()
    try:
        copied = tab.evaluate("navigator.clipboard.readText()")
    except Exception as exc:  # no clipboard in this headless browser: check what would be copied
        print(f"copy button: clipboard unavailable ({exc.__class__.__name__}); checked its target")
        assert target.startswith("#") and code.strip()
    else:
        print("copy button: read the code back from the clipboard")
        assert copied.strip() == code.strip()
    context.close()


def test_search_finds_hdf5(page, base_url):
    page.goto(base_url + "search.html?q=HDF5")
    page.wait_for_selector("#search-results ul.search li a")
    hits = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(a => a.href)")
    pages = {urlsplit(url).path for url in hits}
    assert "/_episodes/04-data-pipeline.html" in pages, hits


def test_screenshots_of_the_landing_page_and_an_episode(page, base_url):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    saved = []
    for name, shot in (("index.html", "landing-page.png"),
                       ("_episodes/05-cpu-vs-gpu.html", "episode-5-cpu-vs-gpu.png")):
        page.goto(base_url + name)
        page.wait_for_load_state("networkidle")
        path = ARTIFACTS / shot
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000
        saved.append(path)
    print("screenshots:", *saved)


@pytest.fixture(scope="module")
def recorded_url(recorded_site):
    """The site built with a quick recorded run of episodes 1 and 3, served like ``base_url``."""
    html, build = recorded_site
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    server = _Server(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()
    thread.join(5)


# Each code cell of an article: does an output (text or image) follow it, and its images' alt text;
# whether the episode leaves its output off the page (tag remove-output: the page shows it otherwise).
# An exercise's cell with blanks is never run (the record has no such cell); an answer's cell is
# folded in a <details> block, whose closed content has no innerText (hence textContent).
_CELLS = """() => [...document.querySelectorAll('article div.cell:not(.tag_exercise)')].map(cell => {
    const output = cell.querySelector('div.cell_output');
    const text = output ? (output.innerText.trim() || output.textContent.trim()) : '';
    return {removed: cell.classList.contains('tag_remove-output'),
            output: Boolean(output && (text || output.querySelector('img'))),
            after: Boolean(output && cell.querySelector('div.cell_input')
                .compareDocumentPosition(output) & Node.DOCUMENT_POSITION_FOLLOWING),
            text: text,
            alts: [...cell.querySelectorAll('.cell_output img')].map(i => i.alt)};
})"""

# For each figure in a cell's output: has the browser loaded it?
_OUTPUT_IMAGES_LOADED = """() => [...document.querySelectorAll('.cell_output img')]
    .map(i => i.complete && i.naturalWidth > 0)"""


def check_recorded_cells(tab, nb, slug: str) -> list[dict]:
    """The page in ``tab`` shows an output right after every code cell that printed or drew in
    the record ``nb``, and none after the others (nor after a cell that the episode tags
    ``remove-output``, whose output the page shows otherwise); every figure has the alt text of
    the record."""
    recorded_outputs = [bool(cell.outputs) for cell in nb.cells if cell.cell_type == "code"]
    seen = tab.evaluate(_CELLS)
    expected = [has and not cell["removed"] for has, cell in zip(recorded_outputs, seen, strict=True)]
    assert [cell["output"] for cell in seen] == expected, slug
    assert all(cell["after"] for cell in seen if cell["output"]), slug
    assert all(alt.startswith("Figure drawn by the code above")
               for cell in seen for alt in cell["alts"]), slug
    return seen


def test_recorded_outputs_follow_their_cells_under_the_provenance_box(browser, recorded_url,
                                                                      recorded_lesson):
    """Every code cell that printed or drew in the recorded run shows its output right after
    it; figures have alt text; the page opens with the run's provenance box."""
    import recorded

    root, _ = recorded_lesson
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for slug in ("01-introduction", "03-environments"):
        nb = recorded.read_record(root / "executed" / f"{slug}.ipynb")
        tab.goto(recorded_url + f"_episodes/{slug}.html", wait_until="load")
        check_recorded_cells(tab, nb, slug)
        box = tab.locator("article .admonition.recorded-run").first
        assert box.is_visible()
        text = box.inner_text()
        assert "quick mode" in text and "synthetic stand-in" in text and "ran in" in text
        # Right under the title, before the questions and everything else.
        assert tab.evaluate("""() => {
            const box = document.querySelector('article .admonition.recorded-run');
            const after = (a, b) => Boolean(a.compareDocumentPosition(b)
                                            & Node.DOCUMENT_POSITION_FOLLOWING);
            return after(document.querySelector('article h1'), box)
                && after(box, document.querySelector('article .questions'));
        }""")
        shot = ARTIFACTS / f"recorded-{slug}.png"
        tab.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    tab.goto(recorded_url + "_episodes/01-introduction.html", wait_until="networkidle")
    images = tab.evaluate(_OUTPUT_IMAGES_LOADED)
    assert images and all(images), "a recorded figure did not load"
    tab.goto(recorded_url + "_episodes/05-cpu-vs-gpu.html", wait_until="load")
    assert "No recorded run of this episode yet" in tab.locator(
        "article .admonition.recorded-run").first.inner_text()
    context.close()
    print("screenshots:", *sorted(ARTIFACTS.glob("recorded-*.png")))


def test_the_lessons_recorded_pages_show_what_their_run_printed_and_drew(browser, base_url):
    """The lesson's own record (executed/), on the site: every output after its cell, the box
    above it all, and on the two core episodes what a reader who runs nothing needs to follow:
    shapes, images, the file's layout, the model, a compact log, the figures of the run."""
    import recorded

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    texts, alts = {}, {}
    paths = sorted((ROOT / recorded.EXECUTED_DIR).glob("*.ipynb"))
    assert paths, "no recorded run in executed/ (tests/test_recorded_lesson.py says how to make one)"
    for path in paths:
        nb = recorded.read_record(path)
        tab.goto(base_url + f"_episodes/{path.stem}.html", wait_until="networkidle")
        seen = check_recorded_cells(tab, nb, path.stem)
        texts[path.stem] = "\n".join(cell["text"] for cell in seen)
        alts[path.stem] = [alt for cell in seen for alt in cell["alts"]]
        box = tab.locator("article .admonition.recorded-run").first.inner_text()
        run = nb.metadata[recorded.METADATA_KEY]
        assert "full size" in box and run["data_label"] in box and run["date"][:10] in box
        assert (run["machine"]["gpu"] or "no GPU") in box
        images = tab.evaluate(_OUTPUT_IMAGES_LOADED)
        assert all(images), f"{path.stem}: a recorded figure did not load"
        shot = ARTIFACTS / f"recorded-lesson-{path.stem}.png"
        tab.screenshot(path=str(shot), full_page=True)
    context.close()
    data = texts["04-data-pipeline"]
    assert "x_train  shape (" in data and "chunks=(" in data and "images/s" in data
    assert alts["04-data-pipeline"], "episode 4 shows no image grid"
    cnn = texts["05-cpu-vs-gpu"]
    assert 'Model: "cifar_cnn"' in cnn and "Total params" in cnn
    assert "Epoch 1/" in cnn and "epoch times (s):" in cnn and "Test accuracy of the" in cnn
    # Comparison (2), learning curves, prediction grid, confusion matrix.
    assert len(alts["05-cpu-vs-gpu"]) >= 5, alts["05-cpu-vs-gpu"]
    print("screenshots:", *sorted(ARTIFACTS.glob("recorded-lesson-*.png")))
