"""Arrays of an uncompressed .npz, memory-mapped (storage/mapped.py), against numpy.load."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from nexusbrain.storage.mapped import load_mapped


def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {
        "model": np.array("static:edge:10f2226ae9df"),
        "seq": np.array(41, dtype=np.int64),
        "centred": np.array(True),
        "ids": rng.integers(1, 2**40, 37).astype(np.int64),
        "half": rng.standard_normal((37, 5)).astype(np.float16),
        "codes": rng.integers(0, 2**63, (37, 2), dtype=np.uint64),
        "fortran": np.asfortranarray(rng.standard_normal((4, 3)).astype(np.float32)),
        "empty": np.zeros((0, 5), np.float16),
    }


def test_every_array_is_what_numpy_load_reads(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, **arrays())
    mapped = load_mapped(path)
    with np.load(path) as loaded:
        assert set(mapped) == set(loaded.files)
        for name in loaded.files:
            assert mapped[name].dtype == loaded[name].dtype
            assert mapped[name].shape == loaded[name].shape
            assert np.array_equal(mapped[name], loaded[name]), name


def test_the_arrays_are_read_only_and_outlive_the_file_being_replaced(tmp_path: Path) -> None:
    """A cache is rewritten by writing a new file and renaming it over the old one: a map of
    the old one keeps seeing what it held."""
    path = tmp_path / "a.npz"
    first = arrays()
    np.savez(path, **first)
    mapped = load_mapped(path)
    assert not mapped["half"].flags.writeable
    with pytest.raises(ValueError):
        mapped["ids"][0] = 1
    replacement = tmp_path / "b.npz"
    np.savez(replacement, **(first | {"ids": first["ids"] + 1}))
    replacement.replace(path)
    assert np.array_equal(mapped["ids"], first["ids"])
    assert np.array_equal(load_mapped(path)["ids"], first["ids"] + 1)


def test_a_compressed_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez_compressed(path, **arrays())
    with pytest.raises(ValueError, match="compressed"):
        load_mapped(path)


def test_an_object_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, ids=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="Python objects"):
        load_mapped(path)


def test_a_file_cut_short_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    np.savez(path, **arrays())
    path.write_bytes(path.read_bytes()[:-300])
    with pytest.raises((ValueError, zipfile.BadZipFile)):
        load_mapped(path)


def test_a_member_whose_array_runs_past_it_is_refused(tmp_path: Path) -> None:
    """A .npy header that promises more rows than its member holds (the zip directory still
    intact): the array would read the next member's bytes."""
    path = tmp_path / "a.npz"
    ids = np.arange(4, dtype=np.int64)
    with zipfile.ZipFile(path, "w") as archive:
        with archive.open("ids.npy", "w") as member:
            header = {"descr": "<i8", "fortran_order": False, "shape": (400,)}
            np.lib.format.write_array_header_1_0(member, header)
            member.write(ids.tobytes())
        with archive.open("half.npy", "w") as member:
            np.lib.format.write_array(member, np.zeros((600, 4), np.float16))
    with pytest.raises(ValueError, match="cut short"):
        load_mapped(path)
