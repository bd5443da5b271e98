"""The environment as the command line's fast path reads it: where the brain is, which
running server to send a command to and with what token, whether to start one in the
background, and BLAS's threads. A command that a running server answers spends most of its
time importing (docs/design/cli.md), and the settings in config.py are dataclasses, each
compiled from source at import: about 6 ms of the ~60 such a command takes, so they are not
imported here. config.py reads the rest of the
environment; nothing else reads `os.environ`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nexusbrain.errors import ConfigError


def pin_blas_threads() -> None:
    """One BLAS thread unless the user says otherwise: search multiplies one query vector by
    the chunk matrix, a product too small for threads to pay (docs/tuning.md). Takes effect
    only before numpy is imported."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def resolve_db(explicit: str | Path | None, environ: Mapping[str, str] | None = None) -> str:
    """--db, else BRAIN_DB_URL, else BRAIN_DB_PATH, else brain.db in the user data directory."""
    env = environ_of(environ)
    chosen = explicit or env.get("BRAIN_DB_URL") or env.get("BRAIN_DB_PATH")
    if chosen:
        text = str(chosen)
        return text if "://" in text else str(Path(text).expanduser())
    import platformdirs

    return str(Path(platformdirs.user_data_dir("nexusbrain")) / "brain.db")


def api_token(environ: Mapping[str, str] | None = None) -> str | None:
    """BRAIN_API_TOKEN, which clients of a running server send as a bearer token."""
    return environ_of(environ).get("BRAIN_API_TOKEN") or None


def server_url(environ: Mapping[str, str] | None = None) -> str | None:
    """BRAIN_URL: the running server the command line sends its requests to, e.g.
    http://127.0.0.1:8765 (without it, the discovery file beside the database says)."""
    url = environ_of(environ).get("BRAIN_URL", "").strip().rstrip("/")
    if not url:
        return None
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest or "/" in rest:
        raise ConfigError(
            f"BRAIN_URL={url!r} is not a server address: use e.g. http://127.0.0.1:8765"
        )
    return url


AUTOSERVE_IDLE_SECONDS = 900.0  # 15 minutes


def autoserve_idle(environ: Mapping[str, str] | None = None) -> float | None:
    """How long a server the command line starts in the background (cli/autoserve.py) waits
    without a request before it stops: BRAIN_AUTOSERVE_IDLE seconds, 900 by default. None:
    BRAIN_AUTOSERVE=0, no such server."""
    env = environ_of(environ)
    if env.get("BRAIN_AUTOSERVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    text = env.get("BRAIN_AUTOSERVE_IDLE", "").strip()
    if not text:
        return AUTOSERVE_IDLE_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ConfigError(
            f"BRAIN_AUTOSERVE_IDLE={text!r} is not a number of seconds: use e.g. 900, "
            "or BRAIN_AUTOSERVE=0 for no background server"
        )
    return seconds


def environ_of(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ
