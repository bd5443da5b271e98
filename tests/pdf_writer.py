"""A minimal PDF writer for tests: real PDF files (PDF 1.4, one Type 1 font, an xref table)
that pypdf and any viewer read, made here so that no binary fixture comes from elsewhere.

Each page is a list of lines set in Helvetica; a page given as None holds only an image (a
small grey square drawn from an image XObject), so a file of such pages has no text layer.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

_LEADING = 14
_TOP = 770


def pdf_bytes(pages: Sequence[Sequence[str] | None], *, title: str | None = None) -> bytes:
    """A PDF of `pages` (lines of Latin-1 text each, or None for an image-only page)."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the page tree's number is known
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    image = add(_image())
    kids = []
    for lines in pages:
        stream = _drawing(lines)
        content = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
                b" /Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> >>"
                % (tree, content, font, image)
            )
        )
    refs = b" ".join(b"%d 0 R" % kid for kid in kids)
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (refs, len(kids))
    info = add(b"<< /Title (%s) >>" % _escaped(title)) if title is not None else None
    return _file(objects, catalog, info)


def _drawing(lines: Sequence[str] | None) -> bytes:
    if lines is None:
        return b"q 120 0 0 120 72 600 cm /Im1 Do Q"
    shown = b" T* ".join(b"(%s) Tj" % _escaped(line) for line in lines)
    return b"BT /F1 11 Tf %d TL 72 %d Td %s ET" % (_LEADING, _TOP, shown)


def _image() -> bytes:
    pixels = zlib.compress(bytes([40, 200, 200, 40]))
    return (
        b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray"
        b" /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream"
        % (len(pixels), pixels)
    )


def _escaped(text: str) -> bytes:
    raw = text.encode("cp1252")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _file(objects: list[bytes], catalog: int, info: int | None) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"/Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info is not None:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n<< %s >>\nstartxref\n%d\n%%%%EOF\n" % (trailer, xref)
    return bytes(out)
