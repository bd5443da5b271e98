"""The README's promises, kept: its test command is what CI runs, its first command starts the
tour, the tour prints what it shows when run again on a fresh brain, and the Python examples
of the README and docs/ run as written."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexusbrain import discovery
from nexusbrain.cli.main import cli
from nexusbrain.environment import resolve_db

from .test_cli_client import PYTHON, stop

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = [README, *(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))]
BLOCKS = [block for text in DOCS for block in re.findall(r"```python\n(.*?)```", text, re.S)]
# Where the tour was run: a clone in /home/ada, the default brain under that home, the default port.
SHOWN_CLONE, SHOWN_HOME, SHOWN_URL = "/home/ada/nexusbrain", "/home/ada", "http://127.0.0.1:8765"
# What differs from run to run: how long a command took, when the brain learned a fact, and
# when a source was last synced (to the minute).
VARYING = re.compile(r"in \d+\.\d+s$|\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d(\.\d+)?\+00:00)?")
# NEXUSBRAIN_REWRITE_DOCS=1: a console test writes what the commands printed into its page
# instead of comparing (then fails, so that the rewrite is read and committed on purpose).
REWRITE = os.environ.get("NEXUSBRAIN_REWRITE_DOCS") == "1"


def rewrite_console(page: Path, printed: list[tuple[str, list[str], list[str]]]) -> None:
    """Put each command's printed lines (command, shown, printed) in place of those its page
    shows, in order, and fail to say so."""
    text, at = page.read_text(encoding="utf-8"), 0
    for command, shown, new in printed:
        old = "\n".join([f"$ {command}", *shown])
        at = text.index(old, at)
        text = text[:at] + "\n".join([f"$ {command}", *new]) + text[at + len(old) :]
        at += 1
    page.write_text(text, encoding="utf-8")
    pytest.fail(f"rewrote {page.name}'s console output: read the diff, then commit it")


def section(heading: str) -> str:
    """The README's text from `heading` to the next heading of the same level or higher
    (a line in a code block, such as a command's markdown output, is not a heading)."""
    level = heading.split(" ")[0]
    lines = README.split(f"\n{heading}\n", 1)[1].splitlines()
    fenced = False
    for n, line in enumerate(lines):
        fenced ^= line.startswith("```")
        if not fenced and re.match(rf"#{{1,{len(level)}}} ", line):
            return "\n".join(lines[:n])
    return "\n".join(lines)


def sh_blocks(heading: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", section(heading), re.S)


def console_steps(block: str) -> list[tuple[str, list[str]]]:
    """Each command of a console block (its `$ ` lines) with the lines shown after it."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def tour() -> Iterator[tuple[str, list[str]]]:
    """Each command of the tour's console blocks, in order, with the lines shown after it."""
    for block in re.findall(r"```console\n(.*?)```", section("## A five-minute tour"), re.S):
        yield from console_steps(block)


def test_the_readme_test_command_is_what_ci_runs() -> None:
    [install, test] = sh_blocks("## Two commands")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip("\n").splitlines()
    assert ci[-1] == test
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e .")


def test_the_first_command_is_where_the_tour_starts() -> None:
    [install, _] = sh_blocks("## Two commands")
    runs = [part for part in install.split(" && ") if part.startswith("nexusbrain ")]
    assert runs == [command for command, _ in tour()][: len(runs)]


def test_the_tour_prints_what_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command of the tour, in order, from the clone's root with a fresh home (so a fresh
    default brain), the `nexusbrain` ones in process and the server as its own process."""
    if shutil.which("curl") is None:
        pytest.skip("the tour's HTTP step runs curl, which is not installed")
    home = tmp_path / "home"
    home.mkdir()
    for name in [n for n in os.environ if n.startswith(("BRAIN_", "XDG_"))]:
        if name != "BRAIN_AUTOSERVE":  # conftest.py: no server in the background
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(ROOT)
    url = SHOWN_URL
    server: subprocess.Popen[bytes] | None = None

    def seen(lines: list[str]) -> list[str]:
        swaps = ((SHOWN_CLONE, str(ROOT)), (SHOWN_HOME, str(home)), (SHOWN_URL, url))
        for shown, here in swaps:
            lines = [line.replace(shown, here) for line in lines]
        return [VARYING.sub("…", line) for line in lines]

    written: list[tuple[str, list[str], list[str]]] = []
    try:
        for command, shown in tour():
            if command.startswith("nexusbrain serve"):
                server, url = serve(shlex.split(command.removesuffix(" &"))[1:])
                printed = [server_line(server) for _ in shown]
            elif command.startswith("nexusbrain "):
                result = CliRunner().invoke(cli, shlex.split(command)[1:])
                printed = result.output.splitlines()
            else:
                here = command.replace("localhost:8765", url.removeprefix("http://"))
                done = subprocess.run(here, shell=True, capture_output=True, text=True, check=True)
                printed = done.stdout.splitlines()
            if REWRITE:
                back = ((str(ROOT), SHOWN_CLONE), (str(home), SHOWN_HOME), (url, SHOWN_URL))
                for here, shown_as in back:
                    printed = [line.replace(here, shown_as) for line in printed]
                written.append((command, shown, printed))
            else:
                assert seen(printed) == seen(shown), command
    finally:
        if server is not None:
            stop(server)
    if REWRITE:
        rewrite_console(ROOT / "README.md", written)


def serve(args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """`nexusbrain serve` on a free port, once its discovery file names it; and its URL."""
    process = subprocess.Popen(
        [PYTHON, "-m", "nexusbrain", *args, "--port", "0"],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    db = resolve_db(None)  # the default brain, under the fresh home
    deadline = time.monotonic() + 60
    while (info := discovery.find(db)) is None or info.pid != process.pid:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"serve did not start: {process.communicate()[0].decode()}")
        time.sleep(0.05)
    return process, info.url


def server_line(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().decode().rstrip("\n")


def test_the_docs_have_python_examples() -> None:
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
