"""Every relative link of README.md and docs/*.md leads to a file of the repository, and a link to a
heading (`page.md#anchor`, `#anchor`) to a heading that exists (GitHub's anchor rule). No service."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _outside_code(text: str) -> list[str]:
    """The lines of a Markdown text that are not inside a fenced code block, inline code blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "``", line))
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but `-` and `_` dropped,
    spaces to `-`, a repeated anchor suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def relative_links(page: Path) -> list[str]:
    """The targets of a page's Markdown links that are not URLs (http, https, mailto)."""
    targets = []
    for line in _outside_code(page.read_text(encoding="utf-8")):
        targets += [t for t in LINK.findall(line) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]
    return targets


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: broken links:\n" + "\n".join(broken)


def test_readme_is_short() -> None:
    """The README is the five-minute tour; the rest belongs in docs/ (issue 36)."""
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) < 170


def test_docs_index_names_every_page() -> None:
    """docs/README.md links every page of docs/ and the spikes folder."""
    index = set(relative_links(REPO / "docs" / "README.md"))
    pages = {p.name for p in (REPO / "docs").glob("*.md") if p.name != "README.md"}
    missing = sorted(p for p in pages if p not in {t.partition("#")[0] for t in index})
    assert not missing, f"docs/README.md does not index {missing}"
    assert any(t.startswith("spikes/") for t in index), "docs/README.md does not index docs/spikes/"
