"""The arrays of an uncompressed .npz file (what `numpy.savez` writes), memory-mapped.

`numpy.load` reads every member of an .npz into memory (`mmap_mode` applies to .npy files
only). An uncompressed member is a .npy file stored as is inside the zip, so each array can be
a read-only view of one map of the whole file instead: opening costs a few page reads, and the
pages a search touches come from the OS page cache, shared by every process that maps the
same file.

No member's CRC is checked: that would read the whole file, which is what the map avoids.
What is checked is the structure: every member stored uncompressed, a .npy header in each,
and each array inside its member and the file.
"""

from __future__ import annotations

import math
import mmap
import struct
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, then the name's and extra's lengths
_LOCAL_SIGNATURE = b"PK\x03\x04"


def load_mapped(path: Path) -> dict[str, NDArray[Any]]:
    """Every array of the .npz at `path`, by name, as read-only views of a map of the file.
    Raises ValueError (or OSError, zipfile.BadZipFile) for a file that is not an uncompressed
    .npz of plain arrays."""
    with path.open("rb") as raw:
        with zipfile.ZipFile(raw) as archive:
            members = archive.infolist()
        size = raw.seek(0, 2)
        layout = {info.filename.removesuffix(".npy"): _layout(raw, info, size) for info in members}
        whole = mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ)
    return {name: _array(whole, *where) for name, where in layout.items()}


def _layout(
    raw: BinaryIO, info: zipfile.ZipInfo, size: int
) -> tuple[np.dtype[Any], tuple[int, ...], bool, int]:
    """Where a member's array is in the file: (dtype, shape, Fortran order, offset)."""
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"{info.filename} is compressed: it cannot be mapped")
    raw.seek(info.header_offset)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    if signature != _LOCAL_SIGNATURE:
        raise ValueError(f"{info.filename} has no local header at {info.header_offset}")
    start = raw.seek(name_length + extra_length, 1)
    version = np.lib.format.read_magic(raw)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(raw)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(raw)
    if dtype.hasobject:
        raise ValueError(f"{info.filename} holds Python objects")
    offset = raw.tell()
    end = offset + math.prod(shape) * dtype.itemsize
    if end > start + info.file_size or end > size:
        raise ValueError(f"{info.filename} is cut short")
    return dtype, shape, fortran, offset


def _array(
    whole: mmap.mmap, dtype: np.dtype[Any], shape: tuple[int, ...], fortran: bool, offset: int
) -> NDArray[Any]:
    count = math.prod(shape)
    if count == 0:
        return np.empty(shape, dtype)
    flat = np.frombuffer(whole, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C")
