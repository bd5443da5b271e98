"""The README's Python examples run as written (in a scratch folder with a docs/ of its own)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_a_python_example_runs(code: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs" / "design"
    docs.mkdir(parents=True)
    (docs / "chunks.md").write_text(
        "# Chunks\n\nChunks are cut at headings and paragraphs.\n\n## The vector index\n\n"
        "The vector index keeps up with writes through the change log.\n",
        encoding="utf-8",
    )
    env = {"BRAIN_EMBEDDER": "hashing", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.strip()
