"""A small, safe markdown renderer: headings, paragraphs, lists, pipe tables, code, quotes,
rules and front matter, with `code`, **bold** and *emphasis* inline. Every piece of text is
escaped first; no HTML in the source is ever passed through, and a link or an image shows as
its text alone (no URL is ever followed or loaded): inline (`[text](url)`, with code or
emphasis in its text), by full or collapsed reference (`[text][ref]`, `[text][]`), or by a
shortcut reference (`[text]`) whose label the text defines. Reference definitions
(`[ref]: url`) and HTML comments (`<!-- ... -->`: lines of their own, or inside a line) are
not shown, as a markdown viewer does not show them. Anything else shows as plain text.

The evals page renders reports with it here; `static/markdown.js` is the same renderer for
the pages that draw documents and snippets in the browser, and a test holds the two to the
same output."""

from __future__ import annotations

import re
from collections.abc import Callable

from markupsafe import Markup, escape

_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)")  # CommonMark: 9 digits at most
_SEPARATOR = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(
    r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])|(?<![\w])_(?![\s_])(.+?)(?<![\s_])_(?![\w])"
)
# Raw text, read from left to right: a code span (kept whole: nothing in it is a link or a
# comment), an HTML comment (dropped), a link or an image, inline or by full or collapsed
# reference, whose text may hold code spans (the text kept), or a shortcut reference.
_RAW = re.compile(
    r"`[^`]*`|<!--.*?-->"
    r"|!?\[((?:[^\]`]|`[^`]*`)*)\](?:\([^()\s]*(?:\s+[^()]*)?\)|\[[^\]]*\])"
    r"|\[([^\]]+)\]"
)
_DEFINITION = re.compile(r" {0,3}\[([^\]]+)\]:\s*\S+(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*$")
_COMMENT = re.compile(r" {0,3}<!--")
_RULE = re.compile(r"\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_FENCES = ("```", "~~~")
_HEADING_TAG = re.compile(r"<(/?)h([1-6])>")

Labels = frozenset[str]  # the reference labels a text defines
Block = Callable[[list[str], int, list[str], Labels], int]


def render(text: str, heading_shift: int = 0) -> Markup:
    """HTML for `text`; safe to insert into a page whatever the text holds. Headings move
    `heading_shift` levels down (a report's `#` under a page's h2 becomes an h3 with 2)."""
    lines = text.splitlines()
    defined = frozenset(label(m[1]) for line in lines if (m := _DEFINITION.match(line)))
    html = "\n".join(_blocks(lines, defined))
    if heading_shift:  # every text is escaped, so the only tags here are ours
        html = _HEADING_TAG.sub(lambda m: f"<{m[1]}h{min(int(m[2]) + heading_shift, 6)}>", html)
    return Markup(html)


def _blocks(lines: list[str], defined: Labels) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        i = _block_at(lines, i)(lines, i, out, defined)
    return out


def label(text: str) -> str:
    """A reference label as links and definitions are matched: case and spacing aside."""
    return " ".join(text.split()).lower()


def _block_at(lines: list[str], i: int) -> Block:
    line = lines[i].strip()
    if line.startswith(_FENCES):
        return _code
    if _COMMENT.match(lines[i]) and _comment_end(lines, i) is not None:
        return _comment
    if _DEFINITION.match(lines[i]):
        return _definitions
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


def _comment_end(lines: list[str], i: int) -> int | None:
    """The line that closes the comment opened at the start of line i, if nothing follows it
    there. None: the lines are read as a paragraph (whose inline rules drop a comment within
    it), so that neither an unclosed comment nor the text after one is lost."""
    rest, n = lines[i].split("<!--", 1)[1], i
    while "-->" not in rest:
        n += 1
        if n == len(lines):
            return None
        rest = lines[n]
    return n if not rest.split("-->", 1)[1].strip() else None


def _comment(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    end = _comment_end(lines, i)
    assert end is not None
    return end + 1


def _definitions(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    while i < len(lines) and _DEFINITION.match(lines[i]):
        i += 1
    return i


def _front_matter(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    end = _front_matter_end(lines)
    assert end is not None
    body = escape("\n".join(lines[1:end]))
    out.append(f'<pre class="front-matter"><code>{body}</code></pre>')
    return end + 1


def _rule(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    out.append("<hr>")
    return i + 1


def _quote(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    inner: list[str] = []
    while i < len(lines) and lines[i].strip().startswith(">"):
        inner.append(lines[i].strip()[1:].removeprefix(" "))
        i += 1
    out.append(f"<blockquote>{chr(10).join(_blocks(inner, defined))}</blockquote>")
    return i


def _code(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    fence = lines[i].strip()[:3]
    body: list[str] = []
    i += 1
    while i < len(lines) and not lines[i].strip().startswith(fence):
        body.append(lines[i])
        i += 1
    out.append(f"<pre><code>{escape(chr(10).join(body))}</code></pre>")
    return i + 1


def _heading(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    match = _HEADING.match(lines[i].strip())
    assert match is not None
    level = len(match.group(1))
    out.append(f"<h{level}>{inline(match.group(2), defined)}</h{level}>")
    return i + 1


def _table(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
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
            parts.append(f"<{tag}{align}>{inline(cell, defined)}</{tag}>")
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


def _list(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
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
        items.append(f"<li>{inline(' '.join(text), defined)}</li>")
    start = int(first.group(2) or 1)  # a list that starts at 10 is numbered from 10
    numbered = f' start="{start}"' if start != 1 else ""
    out.append(f"<{tag}{numbered}>{''.join(items)}</{tag}>")
    return i


def _continues(line: str) -> bool:
    return line[:1] in (" ", "\t") and bool(line.strip()) and _ITEM.match(line) is None


def _paragraph(lines: list[str], i: int, out: list[str], defined: Labels) -> int:
    text: list[str] = []
    while i < len(lines) and lines[i].strip() and (not text or _block_at(lines, i) is _paragraph):
        text.append(lines[i].strip())
        i += 1
    out.append(f"<p>{inline(' '.join(text), defined)}</p>")
    return i


def inline(text: str, defined: Labels = frozenset()) -> Markup:
    """Escaped text with `code` spans, **bold** and *emphasis*; links and images as their
    text, comments dropped."""
    parts = _plain(text, defined).split("`")
    if len(parts) % 2 == 0:  # an unclosed backtick stays a backtick
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    html = []
    for n, part in enumerate(parts):
        if n % 2:
            html.append(f"<code>{escape(part)}</code>")
        else:
            html.append(_spans(str(escape(part))))
    return Markup("".join(html))


def _plain(text: str, defined: Labels) -> str:
    """Raw text with its links and images made their text and its comments dropped; code
    spans as they were."""

    def one(match: re.Match[str]) -> str:
        whole, text, shortcut = match[0], match[1], match[2]
        if text is not None:
            return text
        if shortcut is not None:
            return shortcut if label(shortcut) in defined else whole
        return "" if whole.startswith("<!--") else whole

    return _RAW.sub(one, text)


def _spans(escaped: str) -> str:
    text = _BOLD.sub(r"<strong>\1</strong>", escaped)
    return _EM.sub(lambda m: f"<em>{m[1] if m[1] is not None else m[2]}</em>", text)
