"""Every relative link in the README and docs/ leads somewhere: to a file or folder that
exists, and when it names an anchor, to a heading of that page (as GitHub makes the anchor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:


def unfenced(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lower case, punctuation dropped, spaces to
    hyphens, and -1, -2, ... after a repeated one."""
    seen: dict[str, int] = {}
    out = set()
    for line in unfenced(page.read_text(encoding="utf-8")):
        heading = re.match(r"#{1,6} (.*)", line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def test_anchors_are_made_as_github_makes_them(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# The quality encoder (`embeddings/onnx.py`)\n\n```sh\n# not a heading\n```\n"
        "## A warm server, and --watch\n## Notes\n## Notes\n",
        encoding="utf-8",
    )
    assert anchors(page) == {
        "the-quality-encoder-embeddingsonnxpy",
        "a-warm-server-and---watch",
        "notes",
        "notes-1",
    }


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for line in unfenced(page.read_text(encoding="utf-8")):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if EXTERNAL.match(target):
                continue
            path, _, anchor = target.partition("#")
            goal = (page.parent / path).resolve() if path else page
            if not goal.exists():
                broken.append(f"{target}: no such file")
            elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
                broken.append(f"{target}: no heading makes #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
