"""Citations of the docs resolve, and nothing cites a document outside the repository.

`make lint` builds the site with `mkdocs build --strict`, which checks the links between
pages; this checks the docs citations (page and anchor) in docstrings, comments and results.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("src", "tests", "bench", "scripts", "configs")
CITATION = re.compile(r"docs/([\w/.-]+\.md)((?:#[\w-]+)?)((?:,? #[\w-]+)*)")
OUTSIDE = re.compile(
    r"\b(?:METHODS|DESIGN|STYLE)(?:\.md)?\b \d|\b(?:METHODS|DESIGN|STYLE)\.md\b|shared/docs"
)


def _anchors(page: Path) -> set[str]:
    """Heading slugs as mkdocs' toc (and GitHub) make them for plain-word headings."""
    slugs = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            slugs.add(re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title)).strip("-"))
    return slugs


def _files() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "Makefile"]
    for folder in SOURCES:
        found += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".json", ".yaml"}]
    return [p for p in found if p.is_file()]


def test_every_docs_citation_names_a_page_and_heading_that_exist():
    bad = []
    for path in _files():
        for match in CITATION.finditer(path.read_text(errors="replace")):
            page = ROOT / "docs" / match.group(1)
            if not page.is_file():
                bad.append(f"{path.relative_to(ROOT)}: docs/{match.group(1)} does not exist")
                continue
            names = re.findall(r"#([\w-]+)", match.group(2) + match.group(3))
            missing = [n for n in names if n not in _anchors(page)]
            if missing:
                bad.append(f"{path.relative_to(ROOT)}: docs/{match.group(1)} lacks {missing}")
    assert not bad, "\n".join(bad)


def test_nothing_cites_a_document_outside_the_repository():
    docs = [p for p in (ROOT / "docs").rglob("*.md")]
    files = [p for p in _files() + docs if p != Path(__file__)]
    cited = [p.relative_to(ROOT) for p in files if OUTSIDE.search(p.read_text())]
    assert not cited, f"these cite METHODS/DESIGN/STYLE.md or shared/docs: {cited}"
