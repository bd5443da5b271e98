"""A small, safe markdown renderer: headings, paragraphs, lists, pipe tables, code, quotes,
rules and front matter, with `code`, **bold** and *emphasis* inline. Every piece of text is
escaped first; no HTML in the source is ever passed through, and a link or an image shows as
its text alone (no URL is ever followed or loaded). Anything else shows as plain text.

The evals page renders reports with it here; `static/markdown.js` is the same renderer for
the pages that draw documents and snippets in the browser, and a test holds the two to the
same output."""

from __future__ import annotations

import re
from collections.abc import Callable

from markupsafe import Markup, escape

_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"\s*(?:([-*+])|(\d+)[.)])\s+(.*)")
_SEPARATOR = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(
    r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])|(?<![\w])_(?![\s_])(.+?)(?<![\s_])_(?![\w])"
)
_LINK = re.compile(r"!?\[([^\]]*)\]\(([^()\s]*)(?:\s+[^()]*)?\)")
_RULE = re.compile(r"\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_FENCES = ("```", "~~~")
_HEADING_TAG = re.compile(r"<(/?)h([1-6])>")

Block = Callable[[list[str], int, list[str]], int]


def render(text: str, heading_shift: int = 0) -> Markup:
    """HTML for `text`; safe to insert into a page whatever the text holds. Headings move
    `heading_shift` levels down (a report's `#` under a page's h2 becomes an h3 with 2)."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        i = _block_at(lines, i)(lines, i, out)
    html = "\n".join(out)
    if heading_shift:  # every text is escaped, so the only tags here are ours
        html = _HEADING_TAG.sub(lambda m: f"<{m[1]}h{min(int(m[2]) + heading_shift, 6)}>", html)
    return Markup(html)


def _block_at(lines: list[str], i: int) -> Block:
    line = lines[i].strip()
    if line.startswith(_FENCES):
        return _code
    if i == 0 and line == "---" and _front_matter_end(lines) is not None:
        return _front_matter
    if _HEADING.match(line):
        return _heading
    if _RULE.match(lines[i]):
        return _rule
    if line.startswith("|") and i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1]):
        return _table
    if line.startswith(">"):
        return _quote
    if _ITEM.match(lines[i]):
        return _list
    return _paragraph


def _front_matter_end(lines: list[str]) -> int | None:
    return next((n for n in range(1, len(lines)) if lines[n].strip() in ("---", "...")), None)


def _front_matter(lines: list[str], i: int, out: list[str]) -> int:
    end = _front_matter_end(lines)
    assert end is not None
    body = escape("\n".join(lines[1:end]))
    out.append(f'<pre class="front-matter"><code>{body}</code></pre>')
    return end + 1


def _rule(lines: list[str], i: int, out: list[str]) -> int:
    out.append("<hr>")
    return i + 1


def _quote(lines: list[str], i: int, out: list[str]) -> int:
    inner: list[str] = []
    while i < len(lines) and lines[i].strip().startswith(">"):
        inner.append(lines[i].strip()[1:].removeprefix(" "))
        i += 1
    out.append(f"<blockquote>{render(chr(10).join(inner))}</blockquote>")
    return i


def _code(lines: list[str], i: int, out: list[str]) -> int:
    fence = lines[i].strip()[:3]
    body: list[str] = []
    i += 1
    while i < len(lines) and not lines[i].strip().startswith(fence):
        body.append(lines[i])
        i += 1
    out.append(f"<pre><code>{escape(chr(10).join(body))}</code></pre>")
    return i + 1


def _heading(lines: list[str], i: int, out: list[str]) -> int:
    match = _HEADING.match(lines[i].strip())
    assert match is not None
    level = len(match.group(1))
    out.append(f"<h{level}>{inline(match.group(2))}</h{level}>")
    return i + 1


def _table(lines: list[str], i: int, out: list[str]) -> int:
    head = cells(lines[i])
    aligns = [_align(cell) for cell in cells(lines[i + 1])]
    rows: list[list[str]] = []
    i += 2
    while i < len(lines) and lines[i].strip().startswith("|"):
        rows.append(cells(lines[i]))
        i += 1

    def row(cells: list[str], tag: str) -> str:
        parts = []
        for n, cell in enumerate(cells):
            align = aligns[n] if n < len(aligns) else ""
            parts.append(f"<{tag}{align}>{inline(cell)}</{tag}>")
        return "<tr>" + "".join(parts) + "</tr>"

    body = "".join(row(r, "td") for r in rows)
    out.append(
        f'<div class="table-wrap"><table><thead>{row(head, "th")}</thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
    return i


def cells(line: str) -> list[str]:
    """The cells of a pipe-table row, stripped, `\\|` read as a pipe."""
    text = line.strip().removeprefix("|").removesuffix("|")
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", text)]


def _align(separator: str) -> str:
    if separator.endswith(":"):
        return ' class="num"'
    return ""


def _list(lines: list[str], i: int, out: list[str]) -> int:
    first = _ITEM.match(lines[i])
    assert first is not None
    tag = "ul" if first.group(1) else "ol"
    items: list[str] = []
    while i < len(lines):
        item = _ITEM.match(lines[i])
        if item is None or ("ul" if item.group(1) else "ol") != tag:
            break
        text = [item.group(3)]
        i += 1
        while i < len(lines) and _continues(lines[i]):  # an item's wrapped lines
            text.append(lines[i].strip())
            i += 1
        items.append(f"<li>{inline(' '.join(text))}</li>")
    out.append(f"<{tag}>{''.join(items)}</{tag}>")
    return i


def _continues(line: str) -> bool:
    return line[:1] in (" ", "\t") and bool(line.strip()) and _ITEM.match(line) is None


def _paragraph(lines: list[str], i: int, out: list[str]) -> int:
    text: list[str] = []
    while i < len(lines) and lines[i].strip() and (not text or _block_at(lines, i) is _paragraph):
        text.append(lines[i].strip())
        i += 1
    out.append(f"<p>{inline(' '.join(text))}</p>")
    return i


def inline(text: str) -> Markup:
    """Escaped text with `code` spans, **bold** and *emphasis*; links and images as their
    text."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unclosed backtick stays a backtick
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    html = []
    for n, part in enumerate(parts):
        if n % 2:
            html.append(f"<code>{escape(part)}</code>")
        else:
            html.append(_spans(str(escape(part))))
    return Markup("".join(html))


def _spans(escaped: str) -> str:
    text = _LINK.sub(r"\1", escaped)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    return _EM.sub(lambda m: f"<em>{m[1] if m[1] is not None else m[2]}</em>", text)
