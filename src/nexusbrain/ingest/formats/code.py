"""Source code, its language told by the file's suffix (LANGUAGES): chunks at top-level
definitions, else by lines.

- Units. Python is parsed (the ``ast`` module): each top-level function or class is a unit,
  from its decorators (and the comment lines just above them) to its last line; the
  statements between definitions form units of their own. A class over `max_chars` becomes
  its header and one unit per method, each named "class C" then "def m". Other languages
  start a unit at a line at column 0 that opens a definition (DEFINITIONS: `func` in Go,
  `fn`/`impl`/`struct` in Rust, `function`/`class`/`export` in JavaScript, a signature line
  in C, ...), with the comment and attribute lines just above it. A file Python cannot parse,
  or in a language with no such rule, is cut into units at blank lines.
- A unit over `max_chars` is cut at line ends into pieces within `target_chars` (a line over
  `max_chars` into slices of it); units are then packed while a chunk stays within
  `target_chars`, never across two classes' methods.
- A chunk's heading path is the language, then the enclosing class, then the names of the
  definitions it holds ("def a, def b"). The document's metadata holds the language.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from nexusbrain.config import ChunkingConfig
from nexusbrain.ingest.chunking import line_bounds, span_of
from nexusbrain.ingest.formats.base import Extracted, text_of
from nexusbrain.records import ChunkDraft

LANGUAGES = {
    ".py": "Python",
    ".pyi": "Python",
    ".js": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".jsx": "JavaScript",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".go": "Go",
    ".rs": "Rust",
    ".java": "Java",
    ".kt": "Kotlin",
    ".scala": "Scala",
    ".swift": "Swift",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".cxx": "C++",
    ".hpp": "C++",
    ".hh": "C++",
    ".cs": "C#",
    ".rb": "Ruby",
    ".php": "PHP",
    ".lua": "Lua",
    ".sh": "Shell",
    ".bash": "Shell",
    ".zsh": "Shell",
}

_C_SIGNATURE = (
    r"(?!(?:return|else|if|for|while|switch|case|do|goto)\b)[A-Za-z_][\w\s*&:<>,~]*\([^;]*$"
)
DEFINITIONS = {
    "JavaScript": r"(?:export\s+)?(?:default\s+)?(?:async\s+)?"
    r"(?:function\b|class\b|const\b|let\b|var\b)",
    "TypeScript": r"(?:export\s+)?(?:default\s+|declare\s+)?(?:async\s+|abstract\s+)?"
    r"(?:function\b|class\b|interface\b|type\b|enum\b|namespace\b|const\b|let\b|var\b)",
    "Go": r"(?:func|type|var|const)\b",
    "Rust": r"(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+)*"
    r"(?:fn|struct|enum|trait|impl|mod|type|const|static|union|macro_rules!)\b",
    "Java": r"(?:(?:public|private|protected|abstract|final|sealed|static|strictfp)\s+)*"
    r"(?:class|interface|enum|record|@interface)\b",
    "Kotlin": r"(?:(?:public|private|internal|abstract|open|data|sealed|inline|suspend|enum)\s+)*"
    r"(?:fun|class|interface|object|val|var|typealias)\b",
    "Scala": r"(?:(?:private|protected|abstract|final|sealed|implicit|case)\s+)*"
    r"(?:def|class|object|trait|val|var|type)\b",
    "Swift": r"(?:(?:public|private|internal|fileprivate|open|final)\s+)*"
    r"(?:func|class|struct|enum|protocol|extension|actor)\b",
    "C": rf"(?:struct|enum|union|typedef)\b|{_C_SIGNATURE}",
    "C++": rf"(?:struct|enum|union|typedef|class|namespace|template)\b|{_C_SIGNATURE}",
    "C#": r"(?:(?:public|private|protected|internal|abstract|sealed|static|partial)\s+)*"
    r"(?:class|interface|struct|enum|record|namespace)\b",
    "Ruby": r"(?:def|class|module)\b",
    "PHP": r"(?:(?:abstract|final)\s+)?(?:function|class|interface|trait|enum)\b",
    "Lua": r"(?:local\s+)?function\b",
    "Shell": r"(?:function\s+[\w-]+|[\w-]+\s*\(\s*\))",
}
_OPENS = {language: re.compile(rule) for language, rule in DEFINITIONS.items()}
_LEAD = re.compile(r"\s*(?:#|//|/\*|\*|--|@|\[)")  # comments, decorators, attributes
_NAME_CHARS = 80  # a definition line shown as a name is cut to this
_NAMES = 5  # a chunk's heading names at most this many definitions


@dataclass(frozen=True, slots=True)
class _Unit:
    """Lines first..last (0-based, inclusive) and what they define."""

    first: int
    last: int
    parent: tuple[str, ...] = ()  # the enclosing class, for a method
    name: str = ""  # "def f", "class C", a definition's first line; "" for other code


def extract_code(
    data: bytes, *, name: str, config: ChunkingConfig, max_bytes: int, language: str
) -> Extracted:
    text = text_of(data, name, max_bytes)
    lines = line_bounds(text)
    units = _python_units(text, lines, config) if language == "Python" else None
    if units is None:
        units = list(_units_at(text, lines, _OPENS.get(language)))
    spans = _chunks(text, lines, units, language, config)
    title = name.rstrip("/").rsplit("/", 1)[-1]  # the file's name, suffix and all
    return Extracted(text, tuple(spans), title, {"language": language.lower()})


# --- units -----------------------------------------------------------------------------


def _python_units(
    text: str, lines: Sequence[tuple[int, int]], config: ChunkingConfig
) -> list[_Unit] | None:
    """The units of a Python module; None when it does not parse or its lines do not count
    as ours do (a form feed or other break that Python reads differently)."""
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    if module.body and (module.body[-1].end_lineno or 0) > len(lines):
        return None
    return list(_python_body(text, lines, module.body, 0, len(lines) - 1, (), config))


def _python_body(
    text: str,
    lines: Sequence[tuple[int, int]],
    body: Sequence[ast.stmt],
    first: int,
    last: int,
    parent: tuple[str, ...],
    config: ChunkingConfig,
) -> Iterator[_Unit]:
    """Units of lines first..last, cut where a definition of `body` begins and ends."""
    start = first
    for node in body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        opens = _leading(text, lines, _def_line(node) - 1, start)
        end = (node.end_lineno or node.lineno) - 1
        if opens > start:
            yield _Unit(start, opens - 1, parent)
        yield from _definition(text, lines, node, opens, end, parent, config)
        start = end + 1
    if start <= last:
        yield _Unit(start, last, parent)


def _definition(
    text: str,
    lines: Sequence[tuple[int, int]],
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    first: int,
    last: int,
    parent: tuple[str, ...],
    config: ChunkingConfig,
) -> Iterator[_Unit]:
    kind = "class" if isinstance(node, ast.ClassDef) else "def"
    name = f"{kind} {node.name}"
    size = lines[last][1] - lines[first][0]
    if kind == "def" or size <= config.max_chars or parent:
        yield _Unit(first, last, parent, name)
    else:
        yield from _python_body(text, lines, node.body, first, last, (*parent, name), config)


def _def_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _leading(text: str, lines: Sequence[tuple[int, int]], opens: int, floor: int) -> int:
    """The first of the comment, decorator and attribute lines just above line `opens`."""
    while opens > floor and _LEAD.match(text, lines[opens - 1][0], lines[opens - 1][1]):
        opens -= 1
    return opens


def _units_at(
    text: str, lines: Sequence[tuple[int, int]], opens: re.Pattern[str] | None
) -> Iterator[_Unit]:
    """Units cut where a line at column 0 opens a definition (with the comment lines above
    it), or, with no rule, at blank lines."""
    start = 0
    for i, (s, e) in enumerate(lines):
        if opens is None:
            cut = i > start and not text[s:e].strip()
            at = i
        else:
            cut = opens.match(text, s, e) is not None
            at = _leading(text, lines, i, start)
        if cut and at > start:
            yield _Unit(start, at - 1, (), "")
            start = at
    if start < len(lines):
        yield _Unit(start, len(lines) - 1, (), "")


# --- chunks ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Open:
    start: int
    end: int
    parent: tuple[str, ...]
    names: list[str]


def _chunks(
    text: str,
    lines: Sequence[tuple[int, int]],
    units: Sequence[_Unit],
    language: str,
    config: ChunkingConfig,
) -> list[ChunkDraft]:
    packed: list[_Open] = []
    for unit in units:
        name = unit.name or _named(text, lines, unit, language)
        for start, end in _pieces(text, lines, unit, config):
            current = packed[-1] if packed else None
            if (
                current is not None
                and current.parent == unit.parent
                and end - current.start <= config.target_chars
            ):
                current.end = end
                if name and name not in current.names:
                    current.names.append(name)
            else:
                packed.append(_Open(start, end, unit.parent, [name] if name else []))
    ends = [e for _, e in lines]
    return [_span(text, ends, ordinal, chunk, language) for ordinal, chunk in enumerate(packed)]


def _named(text: str, lines: Sequence[tuple[int, int]], unit: _Unit, language: str) -> str:
    """A unit's name in a language without a parser: its definition line, when it opens with
    one."""
    opens = _OPENS.get(language)
    for s, e in lines[unit.first : unit.last + 1]:
        line = text[s:e]
        if opens is not None and opens.match(line):
            shown = " ".join(line.rstrip(" \t{").split())
            return shown if len(shown) <= _NAME_CHARS else shown[: _NAME_CHARS - 1] + "…"
    return ""


def _pieces(
    text: str, lines: Sequence[tuple[int, int]], unit: _Unit, config: ChunkingConfig
) -> Iterator[tuple[int, int]]:
    """The unit's trimmed span, or, over `max_chars`, runs of its lines within
    `target_chars` (a line over `max_chars` in slices); blank stretches give nothing."""
    start, end = _trimmed(text, lines[unit.first][0], lines[unit.last][1])
    if start >= end:
        return
    if end - start <= config.max_chars:
        yield start, end
        return
    run: tuple[int, int] | None = None
    for s, e in lines[unit.first : unit.last + 1]:
        s, e = _trimmed(text, s, e)
        if s >= e:
            continue
        if run is not None and e - run[0] <= config.target_chars:
            run = (run[0], e)
            continue
        if run is not None:
            yield run
        if e - s > config.max_chars:
            slices = (
                _trimmed(text, p, min(p + config.max_chars, e))
                for p in range(s, e, config.max_chars)
            )
            yield from ((a, b) for a, b in slices if a < b)
            run = None
        else:
            run = (s, e)
    if run is not None:
        yield run


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    body = text[start:end]
    return start + len(body) - len(body.lstrip()), start + len(body.rstrip())


def _span(
    text: str, line_ends: Sequence[int], ordinal: int, chunk: _Open, language: str
) -> ChunkDraft:
    shown = chunk.names if len(chunk.names) <= _NAMES else [*chunk.names[: _NAMES - 1], "…"]
    names = (", ".join(shown),) if shown else ()
    path = (language, *chunk.parent, *names)
    return span_of(text, line_ends, ordinal, (chunk.start, chunk.end), path)
