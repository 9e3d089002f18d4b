"""The documentation stays inside the repository and its links resolve.

A user of the repository has only the repository: the Markdown must neither link nor name the
folder beside it that once held the method contract (``../shared``), and every relative link of
``docs/`` and ``README.md`` must reach an existing file and, with ``#anchor``, an existing
heading (GitHub's anchor rule). ``docs/method.md`` is where "SPEC A.3" and its siblings are
looked up, so its section anchors must hold.

The checker recognises inline links and images, reference definitions and HTML ``href`` /
``src``; it ignores fenced code and inline code for links (a path in code is not a link) but not
for mentions of ``../shared``. Headings are ATX (``#``) headings; anchors follow GitHub's slug
rule (lower case, punctuation dropped, spaces to hyphens, ``-1``, ``-2`` … for repeats).

Two more checks keep ``docs/method.md`` honest: every "SPEC X.Y" cited anywhere has its heading
there, and its worked certificate example is what the engine computes.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest

from core.cfc import Protocol, certify

ROOT = Path(__file__).resolve().parents[1]

# Names of the folder beside the repository: its contract, style guide and the papers' text.
OUTSIDE_MENTION = re.compile(r"\.\./shared\b|\bshared/(?:SPEC|STYLE|USERS|ARCHITECTURE)\.md|\bshared/seeds\b")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_HTML_ATTR = re.compile(r"\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
_HTML_ID = re.compile(r"<a\s[^>]*\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files(root: Path) -> list[Path]:
    """Every Markdown file of the repository (hidden folders and virtual environments left out)."""
    skip = {"node_modules", "venv", ".venv", "__pycache__", "site-packages"}
    return sorted(
        p
        for p in root.rglob("*.md")
        if not any(part.startswith(".") or part in skip for part in p.relative_to(root).parts[:-1])
    )


def _prose_lines(text: str):
    """``(line number, line)`` of every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
        elif fence is not None and match and match.group(1).startswith(fence):
            fence = None
        elif fence is None:
            yield number, line


def links(text: str) -> list[tuple[int, str]]:
    """``(line number, target)`` of every link, image, reference definition and HTML href/src."""
    found = []
    for number, line in _prose_lines(text):
        prose = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        targets = [m.group(1) for m in _INLINE_LINK.finditer(prose)]
        targets += [m.group(1) for m in _REFERENCE_DEF.finditer(prose)]
        targets += [m.group(1) for m in _HTML_ATTR.finditer(prose)]
        found += [(number, t) for t in targets if t]
    return found


def github_slug(heading: str) -> str:
    """GitHub's anchor of a heading's text.

    >>> github_slug("A.3 The certificate of one sample")
    'a3-the-certificate-of-one-sample'
    >>> github_slug("Part B — Paired evaluations under `perturbation`")
    'part-b--paired-evaluations-under-perturbation'
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link or image reads as its text
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a Markdown page offers: heading slugs (repeats numbered) and HTML ids."""
    seen: Counter[str] = Counter()
    found = set()
    for _, line in _prose_lines(text):
        match = _ATX.match(line)
        if match:
            slug = github_slug(match.group(2))
            found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
        found.update(m.group(1) for m in _HTML_ID.finditer(line))
    return found


def _resolve(root: Path, page: Path, path: str) -> Path:
    base = root if path.startswith("/") else page.parent
    return Path(os.path.normpath(base / unquote(path).lstrip("/")))


def outside_problems(root: Path, page: Path) -> list[str]:
    """Mentions of the folder beside the repository, and links that leave the repository."""
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(root).as_posix()
    problems = [
        f"{name}:{number}: mentions {match.group(0)!r} (outside the repository)"
        for number, line in enumerate(text.splitlines(), start=1)
        for match in OUTSIDE_MENTION.finditer(line)
    ]
    for number, target in links(text):
        if target.lower().startswith("file:"):
            problems.append(f"{name}:{number}: links {target!r}, a file on the writer's machine")
        elif not _SCHEME.match(target) and not target.startswith("#"):
            path = target.split("#", 1)[0]
            if path and not _resolve(root, page, path).is_relative_to(root):
                problems.append(f"{name}:{number}: links {target!r}, which resolves outside the repository")
    return problems


def broken_links(root: Path, page: Path) -> list[str]:
    """Relative links to files that do not exist, and ``#anchors`` that no heading of the target offers."""
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(root).as_posix()
    problems = []
    for number, target in links(text):
        if _SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        dest = _resolve(root, page, path) if path else page
        if not dest.is_relative_to(root):
            continue  # reported by outside_problems
        if not dest.exists():
            problems.append(f"{name}:{number}: links {target!r}; {dest.relative_to(root).as_posix()} does not exist")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(
                f"{name}:{number}: links {target!r}; {dest.relative_to(root).as_posix()} has no heading "
                f"with the anchor #{anchor}"
            )
    return problems


def _docs_pages(root: Path) -> list[Path]:
    return sorted((root / "docs").rglob("*.md"))


# ---------------------------------------------------------------------------------------------
# The repository


@pytest.mark.parametrize(
    "page",
    [p for p in markdown_files(ROOT) if p != ROOT / "README.md"],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_no_markdown_file_points_outside_the_repository(page):
    assert outside_problems(ROOT, page) == []


@pytest.mark.parametrize("page", _docs_pages(ROOT), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_links_reach_existing_files_and_headings(page):
    assert broken_links(ROOT, page) == []


def test_readme_links_resolve_and_stay_inside_the_repository():
    readme = ROOT / "README.md"
    assert broken_links(ROOT, readme) == []
    assert outside_problems(ROOT, readme) == []


# DEVELOPING.md's pattern for "a benchmark" (`python tests/bench/bench_x.py`), not a file.
_PATTERN_PATHS = {"tests/bench/bench_x.py"}


def test_every_test_file_the_docs_name_exists():
    """A command in the docs that names a test file runs it: docs/paired.md named a
    tests/paired/test_paired_doctests.py that never existed."""
    missing = set()
    for page in [ROOT / "README.md", *_docs_pages(ROOT)]:
        for path in re.findall(r"tests/[\w/]+\.py", page.read_text(encoding="utf-8")):
            if path not in _PATTERN_PATHS and not (ROOT / path).is_file():
                missing.add(f"{page.relative_to(ROOT).as_posix()}: {path}")
    assert sorted(missing) == []


def test_readme_is_a_map_not_a_log():
    """The README says what, how to start and where to go next; figures and details live in docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 150, len(lines)
    assert max(map(len, lines)) <= 200, max(lines, key=len)  # no wall of text in one table cell


def test_method_page_has_every_section_the_code_cites():
    """Every "SPEC X.Y" cited in code, tests or docs is a heading of docs/method.md."""
    offered = anchors((ROOT / "docs" / "method.md").read_text(encoding="utf-8"))
    sections = {a.split("-", 1)[0] for a in offered if re.fullmatch(r"[ab]\d+-.*", a)}
    cited = set()
    for folder in ("core", "ui", "pages", "tests", "scripts", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".md"}:
                cited.update(re.findall(r"SPEC ([AB]\.\d+)", path.read_text(encoding="utf-8")))
    assert cited, "no SPEC citation found; the pattern no longer matches the code"
    missing = sorted(c for c in cited if c.replace(".", "").lower() not in sections)
    assert not missing, f"docs/method.md has no heading for {missing}"
    assert {f"{p}{i}" for p, n in (("a", 7), ("b", 5)) for i in range(1, n + 1)} <= sections


def _table_after(text: str, heading: str) -> dict[str, str]:
    """First two cells of every body row of the first table after ``heading``."""
    lines = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = ([c.strip() for c in line.strip().strip("|").split("|")] for line in lines[start + 2 : end])
    return {cells[0]: cells[1] for cells in rows}


def test_the_small_certificate_of_method_md_is_what_certify_returns():
    """The worked example of docs/method.md, recomputed by the engine (values to 3 decimals)."""

    def predict_proba(Z):
        p1 = 1 / (1 + np.exp(-(Z @ np.array([2.0, 1.0, 0.5]) - 0.5)))
        return np.column_stack([1 - p1, p1])

    groups = {"income": [0], "debt": [1], "age": [2]}
    cs = certify(predict_proba, np.array([[1.0, 1.0, 2.0]]), groups, np.zeros(3), Protocol())
    row = cs.table.iloc[0]

    def fmt(values):
        return ", ".join(f"{v:.3f}".rstrip("0").rstrip(".").replace("-", "−") for v in values)

    doc = _table_after((ROOT / "docs" / "method.md").read_text(encoding="utf-8"), "### A small certificate")
    got = {
        "one-step drops `δ`": ", ".join(f"{g} {d:g}" for g, d in zip(groups, cs.drops[0])),
        "static path": ", ".join(row["path"]),
        "margins `m_y(x^(k))`, k = 0…3": fmt(row["path_margins"]),
        "`k*`": str(row["flip_budget"]),
        "`c_k`": fmt(cs.collapse[0]),
        "RCMA": f"{row['rcma']:.3f}",
        "`λ*_attenuate_single`": "∞" if np.isinf(row["lambda_star_attenuate_single"]) else "finite",
        "`λ*_attenuate_all`": f"{row['lambda_star_attenuate_all']:g}",
        "`D`": f"{row['degradation']:.3f}",
        "`u`": f"{row['u']:.3f}",
        "FDS": f"{row['fds']:.3f}",
    }
    assert doc == got


# ---------------------------------------------------------------------------------------------
# The checker itself catches what it is for


@pytest.fixture
def planted(tmp_path):
    """A tiny repository with one page of every kind of bad link and a few good ones."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "method.md").write_text("# Method\n\n## A.3 The certificate\n\n## Notes\n\n## Notes\n")
    (root / "docs" / "guide.md").write_text(
        "See `../shared/SPEC.md` for the maths.\n"  # 1: a mention, in code
        "[contract](../../shared/SPEC.md)\n"  # 2: outside and missing
        "[gone](missing.md)\n"  # 3: missing file
        "[bad anchor](method.md#a3-the-certificat)\n"  # 4: missing anchor
        "[good](method.md#a3-the-certificate) [repeat](method.md#notes-1) [self](#guide)\n"
        "[web](https://example.org/x.md) ![img](method.md)\n"
        "```\n[in code](nowhere.md)\n```\n"
        "[file](file:///work/shared/SPEC.md)\n"  # 10: file link (and a mention)
        "# Guide\n"
        "[ref]: /docs/absent.md\n"  # 12: missing, root-relative
    )
    return root


def test_checker_reports_every_planted_problem(planted):
    guide = planted / "docs" / "guide.md"
    assert outside_problems(planted, guide) == [
        "docs/guide.md:1: mentions '../shared' (outside the repository)",
        "docs/guide.md:2: mentions '../shared' (outside the repository)",
        "docs/guide.md:10: mentions 'shared/SPEC.md' (outside the repository)",
        "docs/guide.md:2: links '../../shared/SPEC.md', which resolves outside the repository",
        "docs/guide.md:10: links 'file:///work/shared/SPEC.md', a file on the writer's machine",
    ]
    assert broken_links(planted, guide) == [
        "docs/guide.md:3: links 'missing.md'; docs/missing.md does not exist",
        "docs/guide.md:4: links 'method.md#a3-the-certificat'; docs/method.md has no heading with the anchor "
        "#a3-the-certificat",
        "docs/guide.md:12: links '/docs/absent.md'; docs/absent.md does not exist",
    ]


def test_checker_passes_a_clean_page(planted):
    page = planted / "docs" / "ok.md"
    page.write_text("# Ok\n\n[m](method.md#notes) [n](method.md#notes-1) [top](#ok) <a href='method.md'>m</a>\n")
    assert outside_problems(planted, page) == [] and broken_links(planted, page) == []


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Part A — Counterfactual fragility certificates", "part-a--counterfactual-fragility-certificates"),
        ("B.2 Information levels and identified intervals", "b2-information-levels-and-identified-intervals"),
        ("Where each SPEC formula lives", "where-each-spec-formula-lives"),
        ("Bad input, writes and errors (issue 13)", "bad-input-writes-and-errors-issue-13"),
        ("`core.cfc` — the [certificate](x.md) engine", "corecfc--the-certificate-engine"),
        ("Choices where SPEC is silent", "choices-where-spec-is-silent"),
    ],
    ids=["em-dash", "section-number", "plain", "parentheses", "code-and-link", "sentence"],
)
def test_github_slug(heading, slug):
    assert github_slug(heading) == slug


def test_install_lines_name_a_checkout_or_a_wheel():
    # Issue 40: docs/own_model.md said `pip install "reliability-audit[export]"`, a registry name,
    # while the package is installed from a checkout or a wheel built from one.
    registry = re.compile(r"""pip install\s+["']?reliability-audit\b""")
    offenders = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in markdown_files(ROOT)
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        if registry.search(line) and "finds nothing" not in line and "used to" not in line
    ]
    assert not offenders, offenders
    assert 'pip install ".[export]"' in (ROOT / "docs" / "own_model.md").read_text(encoding="utf-8")
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "pip install ." in install and ".whl[export]" in install
