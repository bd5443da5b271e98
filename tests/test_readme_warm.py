"""The warm-server session of docs/cli.md (the console block of *A warm server, and --watch*),
replayed for real: `serve --watch` in a scratch folder, each command run, and every line the
block shows the server or a command printing seen in the same order."""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
from pathlib import Path

from .test_cli_client import PYTHON, environment, stop
from .test_readme import REWRITE, console_steps, rewrite_console
from .test_watch import eventually

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
SECTION = PAGE.read_text(encoding="utf-8").split("\n## A warm server, and --watch\n")[1]
BLOCK = re.search(r"```console\n(.*?)```", SECTION, re.S).group(1)  # type: ignore[union-attr]
DEMO = "/tmp/demo"  # the folder the block was run in
DEFAULT = "http://127.0.0.1:8765"


def demo_notes(folder: Path) -> None:
    """The two notes docs/cli.md's sessions were run with, in `folder`/notes."""
    notes = folder / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text(
        "# Deploy\n\nThe deploy failed because the signing key had expired.\n"
    )
    (notes / "backups.md").write_text("# Backups\n\nBackups run nightly at 02:00 to the NAS.\n")


def test_the_warm_server_session_prints_what_it_shows(tmp_path: Path) -> None:
    demo_notes(tmp_path)
    (serve, expected), *commands = console_steps(BLOCK)
    assert serve == "nexusbrain --db brain.db serve --watch notes &"
    env = environment(BRAIN_EMBEDDER="edge")
    process = subprocess.Popen(
        [PYTHON, "-m", "nexusbrain", *shlex.split(serve)[1:-1], "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline().decode()
        url = banner.rsplit(" at ", 1)[1].strip()
        printed: list[str] = [banner.rstrip("\n")]
        reader = threading.Thread(
            target=lambda: printed.extend(line.decode().rstrip("\n") for line in process.stdout),  # type: ignore[union-attr]
            daemon=True,
        )
        reader.start()

        def shown(lines: list[str]) -> list[str]:
            return [x.replace(DEMO, str(tmp_path)).replace(DEFAULT, url) for x in lines]

        log = shown(expected)
        written: list[tuple[str, list[str], list[str]]] = []
        eventually(lambda: len(printed) >= len(log), "the server's first lines")
        for command, lines in commands:
            if command.startswith("nexusbrain "):
                done = subprocess.run(
                    [PYTHON, "-m", "nexusbrain", *shlex.split(command)[1:]],
                    cwd=tmp_path,
                    env=env,
                    capture_output=True,
                    timeout=60,
                )
                said = done.stdout.decode().splitlines()
                if REWRITE:
                    back = [x.replace(str(tmp_path), DEMO).replace(url, DEFAULT) for x in said]
                    written.append((command, lines, back))
                else:
                    assert said == shown(lines), command
            else:
                subprocess.run(command, shell=True, cwd=tmp_path, check=True)
                log += shown(lines)
                eventually(lambda: len(printed) >= len(log), command)  # noqa: B023
        assert printed == log
    finally:
        stop(process)
    if REWRITE:
        rewrite_console(PAGE, written)
