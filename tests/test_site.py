"""The lesson site: it builds without warnings, its pages and links are whole, the episode
boxes and the schedule are rendered from the front matter."""

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from carpentry import Break, Session, SetupCheck, Slot, episodes, schedule_parts
from conftest import ROOT, build_book, lesson_files

TOC_PAGES = ["index", "setup", "exercises", "reference", "guide", "profiles",
             "conduct", "contributing", "license", "citation"]


class _Page(HTMLParser):
    """Collects links, images, ids, headings and element classes of one HTML page."""

    def __init__(self):
        super().__init__()
        self.links, self.images, self.ids, self.classes = [], [], set(), []
        self.h1, self._in_h1, self._in_article = [], False, 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        self.classes.append((tag, attrs.get("class", "") or ""))
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs)
        if tag == "h1":
            self._in_h1 = True
            self.h1.append("")

    def handle_endtag(self, tag):
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        if self._in_h1:
            self.h1[-1] += data


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def has_class(page: _Page, name: str) -> int:
    return sum(name in cls.split() for _, cls in page.classes)


@pytest.fixture(scope="module")
def site(built_site):
    html, result = built_site
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return html


def test_site_builds_without_warnings(built_site):
    html, result = built_site
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert not re.findall(r".*WARNING.*", log), re.findall(r".*WARNING.*", log)
    assert (html / "index.html").exists()


def test_every_page_in_the_toc_is_rendered(site):
    for name in TOC_PAGES + [ep.docname for ep in episodes(ROOT)]:
        assert (site / f"{name}.html").exists(), name


def _internal_pages(site: Path):
    skip = {"genindex.html", "search.html"}
    return [p for p in site.rglob("*.html") if p.name not in skip and "_static" not in p.parts]


def test_internal_links_and_images_resolve(site):
    broken = []
    pages = {p: parse(p) for p in _internal_pages(site)}
    for path, page in pages.items():
        targets = [(href, "link") for href in page.links] + [(img.get("src", ""), "image") for img in page.images]
        for ref, kind in targets:
            parts = urlsplit(ref)
            if parts.scheme or ref.startswith(("mailto:", "//")):
                continue  # external: not checked offline
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if not target.exists():
                broken.append(f"{path.relative_to(site)}: {kind} {ref} -> missing file")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: {kind} {ref} -> no such anchor")
    assert not broken, "\n".join(broken)


def test_every_image_has_alt_text(site):
    missing = [f"{p.relative_to(site)}: {img.get('src')}"
               for p in _internal_pages(site) for img in parse(p).images
               if "logo" not in (img.get("class") or "") and not (img.get("alt") or "").strip()]
    assert not missing, missing


@pytest.mark.parametrize("ep", episodes(ROOT), ids=lambda ep: ep.slug)
def test_episode_renders_its_front_matter(site, ep):
    page = parse(site / f"{ep.docname}.html")
    text = (site / f"{ep.docname}.html").read_text(encoding="utf-8")
    # The title appears once as the page heading (the theme repeats h1 only in its print header).
    titles = [h.strip().rstrip("#").strip() for h in page.h1]
    assert set(titles) == {ep.meta["title"]}, titles
    for box in ("questions", "objectives", "keypoints"):
        assert has_class(page, box) == 1, box
    for item in ep.meta["questions"] + ep.meta["objectives"]:
        assert _words(item) in _words(_strip_tags(text)), item
    # Key points come after the last solution: the box closes the episode.
    assert text.rfind(" keypoints admonition") > text.rfind(" solution important dropdown admonition") > 0


def test_solutions_are_collapsed(site):
    for ep in episodes(ROOT):
        page = parse(site / f"{ep.docname}.html")
        solutions = [cls.split() for _, cls in page.classes if "solution" in cls.split()]
        for cls in solutions:
            assert "dropdown" in cls and "toggle-shown" not in cls, cls


def test_schedule_on_the_landing_page(site):
    text = _words(_strip_tags((site / "index.html").read_text(encoding="utf-8")))
    for part in schedule_parts(ROOT):
        assert _words(part.caption) in text
        for start, item, end in part.rows:
            if isinstance(item, Break):
                assert _words(f"{start} Break ({item.minutes} min)") in text
            elif isinstance(item, SetupCheck):
                assert _words(f"{start} Setup check:") in text
            elif isinstance(item, Slot):
                assert _words(f"{start} {item.label}: {item.what} {item.minutes} min") in text
            elif isinstance(item, Session):
                assert _words(f"{start} Launch the {item.label} in Open OnDemand") in text
            else:
                inside = part.inner_breaks.get(item.slug)
                halfway = f", with a break of {inside} min halfway" if inside else ""
                assert _words(f"{start} {item.number}. {item.meta['title']}{halfway} "
                              f"{item.meta['teaching']} min {item.meta['exercises']} min") in text
        assert f"{part.minutes // 60}:{part.minutes % 60:02d} Finish" in text


def test_footer_states_both_licences(site):
    text = _strip_tags((site / "index.html").read_text(encoding="utf-8"))
    assert "CC BY 4.0" in text and "MIT" in text


def test_bad_front_matter_fails_the_build(tmp_path):
    source = lesson_files(tmp_path)
    episode = source / "_episodes" / "01-introduction.md"
    episode.write_text(episode.read_text().replace("teaching: ", "teaching_minutes: ", 1))
    result = build_book(source, keep_going=False)  # stops at the first error
    assert result.returncode != 0
    assert "missing key 'teaching'" in result.stdout + result.stderr


def _strip_tags(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def _words(text: str) -> str:
    import html as _html

    text = _html.unescape(re.sub(r"[`*]", "", text))
    # Sphinx turns straight quotes into typographic ones ("smart quotes").
    text = text.translate(str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}))
    # Inline markup (code, emphasis) leaves a space before punctuation once the tags are gone.
    return re.sub(r" ([,.;:!?)])", r"\1", " ".join(text.split()))


def test_exercise_list_collects_every_exercise(site):
    listed = _words(_strip_tags((site / "exercises.html").read_text(encoding="utf-8")))
    titles = [m.group(1).strip() for ep in episodes(ROOT)
              for m in re.finditer(r"^:{3,}\{exercise\}\s*(.+)$", (ROOT / ep.path).read_text(), re.MULTILINE)]
    assert titles
    for title in titles:
        assert _words(title) in listed, title


def test_no_table_has_an_empty_header_cell(site):
    """Every header cell names its column: an empty one tells a screen reader nothing (the
    first column of the reference tables names what each row measures)."""
    empty = re.compile(r"<th\b[^>]*>\s*(?:<p>\s*</p>\s*)?</th>")
    found = [f"{p.relative_to(site)}: {len(empty.findall(p.read_text(encoding='utf-8')))} empty <th>"
             for p in _internal_pages(site) if empty.search(p.read_text(encoding="utf-8"))]
    assert not found, found


def test_every_page_links_the_favicon(site):
    """The site's icon (_config.yml: html.favicon) is named by every page and is there."""
    icon = site / "_static" / "favicon.svg"
    assert icon.is_file() and b"<svg" in icon.read_bytes()[:200]
    missing = []
    for path in _internal_pages(site):
        links = re.findall(r'<link rel="icon" href="([^"]+)"', path.read_text(encoding="utf-8"))
        if not links or (path.parent / links[0]).resolve() != icon.resolve():
            missing.append(f"{path.relative_to(site)}: {links}")
    assert not missing, missing
