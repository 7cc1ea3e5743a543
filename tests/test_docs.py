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


# ----- docs/fidelity.md: every comparison row cites both sides ----------------------------

FIDELITY = ROOT / "docs" / "fidelity.md"
# A file of the published repository: a backticked path with a file extension, or its README.
PUBLISHED_FILE = re.compile(r"`[^`]*\.(?:py|sh|yaml|yml|json|jinja|md|txt)\b[^`]*`|README")
# A file of ours: `path`, `path:LINE` or `path: name` (a name the file holds).
OURS_FILE = re.compile(r"`([\w./-]+\.(?:py|yaml|json))\b(?::(\d+)|:\s*(\w+))?")
# Rows written before issue 47 that do not cite both yet: (section, component). The test fails
# when one of them gains its citations (remove it here) or a new row lacks them.
UNCITED_BEFORE_ISSUE_47: frozenset[tuple[str, str]] = frozenset(
    {
        # OraRL's oracle-row truncation: the file that keeps the tail is not in our snapshot
        ("OraRL (`configs/orarl.yaml`, 4B; `configs/orarl_9b.yaml`, 9B)", "annotation truncation"),
    }
)


def _ours(path: str) -> Path | None:
    for base in (ROOT / "src" / "videorl", ROOT):
        if (base / path).is_file():
            return base / path
    return None


def _resolves(path: str, line: str, name: str) -> bool:
    found = _ours(path)
    if found is None:
        return False
    text = found.read_text(errors="replace")
    if line and not 1 <= int(line) <= text.count("\n") + 1:
        return False
    return not name or name in text


def _cites_ours(cell: str) -> bool:
    return any(_resolves(*cite) for cite in OURS_FILE.findall(cell))


def fidelity_rows() -> list[tuple[str, str, str, str]]:
    """(section, component, published, ours) of every row of the tables with a verdict."""
    rows, section, in_table = [], "", False
    for line in FIDELITY.read_text().splitlines():
        if line.startswith("#"):
            section, in_table = line.lstrip("#").strip(), False
        elif line.startswith("| component"):
            in_table = "verdict" in line
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            rows.append((section, cells[0].strip(), cells[1], cells[2]))
    return rows


def test_every_fidelity_row_cites_a_published_file_and_one_of_ours():
    rows = fidelity_rows()
    assert len(rows) > 100  # the parser found the tables
    lacking = {
        (section, component)
        for section, component, published, ours in rows
        if not (PUBLISHED_FILE.search(published) and _cites_ours(ours))
    }
    new = sorted(lacking - UNCITED_BEFORE_ISSUE_47)
    assert not new, "rows without a published file or a file of ours: " + "; ".join(
        f"{s}: {c}" for s, c in new
    )
    fixed = sorted(UNCITED_BEFORE_ISSUE_47 - lacking)
    assert not fixed, f"these rows now cite both sides; drop them from the list: {fixed}"


def test_every_file_of_ours_a_fidelity_row_cites_exists():
    broken = [
        f"{section}: {component}: {':'.join(c for c in cite if c)}"
        for section, component, _, ours in fidelity_rows()
        for cite in OURS_FILE.findall(ours)
        if not _resolves(*cite)
    ]
    assert not broken, "citations of ours that do not resolve: " + "; ".join(broken)


def test_a_citation_of_ours_must_resolve():
    assert _cites_ours("`algorithms/loss.py: kl_penalty`")
    assert _cites_ours("`configs/longvt.yaml:3`")
    assert not _cites_ours("`algorithms/loss.py: no_such_function`")
    assert not _cites_ours("`algorithms/loss.py:100000`")
    assert not _cites_ours("`algorithms/nowhere.py`")


# ----- docs/design.md: the layer table is LAYERS of tests/test_layers.py ------------------


def test_the_design_layer_table_is_generated_from_the_layer_test():
    from tests.layer_table import DESIGN, rewritten

    page = DESIGN.read_text(encoding="utf-8")
    assert rewritten(page) == page, (
        "docs/design.md's layer table is stale; regenerate it: python -m tests.layer_table --write"
    )
