"""Settings: frozen objects with their defaults committed here, and the reader of the
environment (with environment.py, which holds what the command line's fast path needs).
Nothing else in the package reads `os.environ`.

The variables, all optional:

| variable | what |
| --- | --- |
| `BRAIN_DB_URL` | the brain: a path, `sqlite:///path` (`postgresql://…` with the postgres extra) |
| `BRAIN_DB_PATH` | the SQLite file, when `BRAIN_DB_URL` is not set |
| `BRAIN_DB_READ_URL` | hot standbys of a PostgreSQL brain for its reads (space-separated URLs) |
| `BRAIN_EMBEDDER` | `edge` (default), `quality`, `hashing`, `none`, `openai` or `onnx:DIR` |
| `BRAIN_EMBED_URL`, `_MODEL`, `_API_KEY` | `openai`: its server (ending in `/v1`), model, key |
| `BRAIN_EMBED_DIMENSIONS`, `BRAIN_EMBED_BATCH` | `openai`: dimensions to ask for, texts a request |
| `BRAIN_RERANKER` | `none` (default), `quality`, `hashing`, `http` or `onnx:DIR` |
| `BRAIN_RERANK_URL`, `_MODEL`, `_API_KEY` | `http`: its server, model and key |
| `BRAIN_MODEL_TIMEOUT` | seconds a search waits for a model server (2) |
| `BRAIN_RERANK_BUDGET` | seconds a search waits for its reranker (the mode's, 6) |
| `BRAIN_CAPTURE`, `BRAIN_CAPTURE_MAX_ROWS` | capture searches for replay, and how many to keep |
| `BRAIN_POSTINGS_CACHE_MB` | memory for scored postings (32) |
| `BRAIN_DURABILITY` | `full` (default: a write is acknowledged once on disk) or `normal` |
| `BRAIN_API_TOKEN` | the bearer token the server requires (needed beyond loopback) |
| `BRAIN_URL` | a running server for the command line (else: the discovery file, discovery.py) |
| `BRAIN_BIND_HOST`, `BIND_PORT` | where `serve` listens (127.0.0.1:8765) |
| `BRAIN_RATE_LIMIT`, `BRAIN_RATE_BURST`, `BRAIN_RATE_LIMIT_LOOPBACK` | per-client rate limit |
| `BRAIN_ALLOWED_HOSTS` | host names the server answers to beside loopback's (comma-separated) |
| `BRAIN_TRUSTED_PROXIES` | proxies whose X-Forwarded-For is believed (comma-separated) |
| `BRAIN_ENVELOPE` | the envelope the server reports against (`desktop`) |
| `BRAIN_EVALS_DIR` | where eval results are logged (`.nexusbrain-evals` at the git root) |
| `BRAIN_ANSWER_*` | the answer-generation endpoint of `eval run-all` (see evals/answer.py) |
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from nexusbrain.environment import environ_of, resolve_db
from nexusbrain.errors import ConfigError

if TYPE_CHECKING:
    from nexusbrain.envelopes import Envelope

# What only the server or a default path needs (envelopes, platformdirs) is imported where
# it is used.

DEFAULT_PORT = 8765
DEFAULT_HOST = "127.0.0.1"
CAPTURE_MAX_ROWS = 100_000
POSTINGS_CACHE_MB = 32
# Turns in one conversation session. Ingest is linear in the turns; the cap keeps one request
# from holding a server thread for long (docs/design/reliability.md measures it).
MAX_SESSION_TURNS = 20_000
# Searches a brain ranks at once; more wait their turn. Most of a search holds the GIL, so
# searches side by side in one process only share it, and each switch costs CPU: at 8
# clients, one at a time answered 15% more requests on SQLite and 7% more on PostgreSQL,
# with a p95 a quarter to a third lower (docs/tuning.md). `serve --workers N` is what uses
# more cores.
SEARCHES_AT_ONCE = 1
# `serve` starts one worker per core, at most this many: each holds a brain of its own (the
# vector cache's pages are shared; docs/design/cli.md measures the rest).
MAX_WORKERS = 4
DEFAULT_RATE = 50.0
DEFAULT_BURST = 100
# pgvector HNSW, for a PostgreSQL brain that has one (`dense-index build`; docs/tuning.md):
# m 32 doubled the build time for the recall that a larger ef_search gives at m 16
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
HNSW_EF_SEARCH = 200  # candidates a search reads from the index and rescores
# maintenance_work_mem for a build: while the graph fits in it the build stays in memory;
# past that PostgreSQL says so (passed on as progress) and goes on much more slowly
HNSW_BUILD_MEMORY = "512MB"


class Profile(StrEnum):
    """Embedding profiles (embeddings/profiles.py loads them): the shipped models, a model
    on an OpenAI-compatible server (`openai`) and a sentence-transformers folder exported to
    ONNX (`onnx`, named `onnx:DIR`)."""

    EDGE = "edge"
    QUALITY = "quality"
    HASHING = "hashing"
    NONE = "none"
    OPENAI = "openai"
    ONNX = "onnx"


def parse_profile(name: str) -> Profile:
    """A profile by name (`onnx:DIR` is the `onnx` profile; its folder: `parse_embedder`)."""
    return parse_embedder(name)[0]


def parse_embedder(name: str) -> tuple[Profile, Path | None]:
    """BRAIN_EMBEDDER's value: the profile, and the folder of `onnx:DIR`."""
    said = f"embedding profile {name!r}"
    return _with_folder(name, Profile, said, "model's folder", "a sentence-transformers model")


_Kind = TypeVar("_Kind", bound=StrEnum)


def _with_folder(
    name: str, kinds: type[_Kind], said: str, folder: str, model: str, default: str = ""
) -> tuple[_Kind, Path | None]:
    """`KIND`, or `onnx:DIR` (the one kind that names a folder): the kind and its folder."""
    kind, _, path = name.strip().partition(":")
    try:
        chosen = kinds(kind.strip().lower() or default)
    except ValueError:
        choices = ", ".join(k.value if k.value != "onnx" else "onnx:DIR" for k in kinds)
        raise ConfigError(f"{said} is not one of: {choices}") from None
    if (chosen.value == "onnx") != bool(path):
        raise ConfigError(
            f"{said}: name the {folder} as onnx:DIR ({model} exported to ONNX), and only for onnx"
        )
    return chosen, Path(path).expanduser() if path else None


class Reranking(StrEnum):
    """Rerankers (rerankers/ loads them): none, the quality profile's MiniLM scoring the
    fused top by cosine, the hashing model (tests), a server's /rerank, an ONNX cross-encoder
    (`onnx:DIR`)."""

    NONE = "none"
    QUALITY = "quality"
    HASHING = "hashing"
    HTTP = "http"
    ONNX = "onnx"


def parse_reranker(name: str) -> tuple[Reranking, Path | None]:
    """BRAIN_RERANKER's value: the reranker, and the folder of `onnx:DIR`."""
    said = f"BRAIN_RERANKER={name!r}"
    return _with_folder(name, Reranking, said, "cross-encoder's folder", "a model", "none")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A model on a server: its base URL, the model's name there, and the key (never shown)."""

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)


MODEL_TIMEOUT = 2.0  # seconds a search waits for a model server before going on without it
EMBED_BATCH = 32  # texts in one request to an embedding server


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Where the embedder and the reranker come from, beyond the profile's name
    (docs/design/models.md)."""

    embed_folder: Path | None = None  # onnx:DIR
    embed_server: Endpoint | None = None  # openai
    dimensions: int | None = None  # asked of the embedding server
    batch: int = EMBED_BATCH
    reranker: Reranking = Reranking.NONE
    rerank_folder: Path | None = None  # onnx:DIR
    rerank_server: Endpoint | None = None  # http
    timeout: float = MODEL_TIMEOUT
    rerank_budget: float | None = None  # replaces the modes' (an evaluation on a busy machine)


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    target_chars: int = 1200  # pack blocks into a chunk while it stays within this size
    max_chars: int = 2400  # no chunk is larger, unless it holds a fence larger by itself

    def __post_init__(self) -> None:
        if not 0 < self.target_chars <= self.max_chars:
            raise ValueError(
                f"chunking needs 0 < target_chars <= max_chars, "
                f"got target_chars={self.target_chars}, max_chars={self.max_chars}"
            )


@dataclass(frozen=True, slots=True)
class Limits:
    """Input limits. Anything over them is refused with a clear error, and nothing is stored."""

    max_document_bytes: int = 10 * 1024 * 1024
    max_request_bytes: int = 16 * 1024 * 1024
    max_import_bytes: int = 4 * 1024 * 1024 * 1024
    max_query_chars: int = 4_000
    max_k: int = 1_000
    max_budget_tokens: int = 200_000
    max_session_turns: int = MAX_SESSION_TURNS  # turns in one conversation session


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """BM25 (storage/bm25.py): the weights of the chunk's text, heading-path and context
    columns, its k1 and b, and which query words count."""

    text_weight: float = 1.0
    heading_weight: float = 0.5
    context_weight: float = 0.3
    k1: float = 1.2
    b: float = 0.75
    drop_stopwords: bool = True
    extended_stopwords: bool = True  # also drop question and function words (what, did...)
    # Memory for the scored postings of recent query tokens (16 bytes a posting).
    postings_cache_mb: int = POSTINGS_CACHE_MB

    @property
    def weights(self) -> tuple[float, float, float]:
        """(text, heading path, context)."""
        return (self.text_weight, self.heading_weight, self.context_weight)


class Durability(StrEnum):
    """When a write is acknowledged. FULL: once it is on disk, so it survives a crash of the
    machine or a power cut (SQLite's synchronous=FULL). NORMAL: once it is in the write-ahead
    log, so it survives a crash of the process but the last writes may be lost to a power cut;
    faster (docs/design/reliability.md measures the cost)."""

    FULL = "full"
    NORMAL = "normal"


@dataclass(frozen=True, slots=True)
class StorageConfig:
    durability: Durability = Durability.FULL
    busy_timeout_ms: int = 10_000  # a writer waits this long for another to finish
    read_urls: tuple[str, ...] = ()  # PostgreSQL hot standbys that serve reads
    # where a PostgreSQL replica keeps its dense index between starts (None: nowhere)
    cache_dir: Path | None = None


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """Opt-in capture of every search and recall, for replay evaluation."""

    enabled: bool = False
    max_rows: int = CAPTURE_MAX_ROWS  # oldest rows go first


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """The knowledge graph. A functional type holds one value per subject at a time: a new
    `to` for the same `from` and type closes the old fact (see docs/design/graph.md)."""

    functional_types: frozenset[str] = frozenset({"works_at", "lives_in", "reports_to"})
    link_type: str = "links_to"  # the type of edges made from [[wikilinks]] in notes
    max_depth: int = 5  # traversal depth limit
    max_paths: int = 1_000  # traversal stops (truncated) after this many paths
    context_hits: int = 5  # graph context looks for entities in this many top hits
    context_entities: int = 10  # and takes the relationships of at most this many of them
    search_context_tokens: int = 500  # token cap for graph context on /search?graph=true


@dataclass(frozen=True, slots=True)
class RateLimit:
    rate: float = DEFAULT_RATE  # requests per second per client; 0 turns limiting off
    burst: int = DEFAULT_BURST  # requests a client may send at once
    limit_loopback: bool = False  # loopback clients are exempt unless this is set

    def __post_init__(self) -> None:
        if self.rate < 0 or not math.isfinite(self.rate):
            raise ConfigError(f"rate limit {self.rate} must be a number >= 0 (0 turns it off)")
        if self.burst < 1:
            raise ConfigError(f"rate limit burst {self.burst} must be at least 1")

    @property
    def enabled(self) -> bool:
        return self.rate > 0


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    limits: Limits = field(default_factory=Limits)
    rate_limit: RateLimit = field(default_factory=RateLimit)
    envelope: Envelope = field(default_factory=lambda: _envelope(None))
    envelope_check_seconds: float = 30.0  # 0: only /stats checks the envelope
    allowed_hosts: tuple[str, ...] = ()  # names beside loopback's: "brain.lan", "host:port", "*"
    trusted_proxies: tuple[str, ...] = ()  # addresses or networks whose X-Forwarded-For counts


@dataclass(frozen=True, slots=True)
class AnswerSettings:
    """The OpenAI-compatible endpoint that answers questions in an eval sweep."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    judge_model: str | None = None
    price_in: float | None = None  # USD per million tokens; None: the price table's
    price_out: float | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    db: str | Path  # a path, sqlite:///path, or a database URL (storage.open)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    limits: Limits = field(default_factory=Limits)
    lexical: LexicalConfig = field(default_factory=LexicalConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    capture: CaptureConfig = field(default_factory=CaptureConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    embedder: Profile = Profile.EDGE
    models: ModelSettings = field(default_factory=ModelSettings)
    default_domain: str = "default"
    searches_at_once: int = SEARCHES_AT_ONCE

    @classmethod
    def from_env(
        cls, db: str | Path | None = None, environ: Mapping[str, str] | None = None
    ) -> Settings:
        """The brain's settings: `db` (the --db flag) else BRAIN_DB_URL, else BRAIN_DB_PATH,
        else brain.db in the platform's data directory; the rest from BRAIN_* variables."""
        env = environ_of(environ)
        capture = CaptureConfig(
            enabled=_flag(env, "BRAIN_CAPTURE"),
            max_rows=_count(env, "BRAIN_CAPTURE_MAX_ROWS", CAPTURE_MAX_ROWS),
        )
        lexical = LexicalConfig(
            postings_cache_mb=_count(env, "BRAIN_POSTINGS_CACHE_MB", POSTINGS_CACHE_MB)
        )
        profile, _ = parse_embedder(env.get("BRAIN_EMBEDDER", Profile.EDGE.value))
        return cls(
            db=resolve_db(db, env),
            lexical=lexical,
            storage=StorageConfig(
                durability=_durability(env.get("BRAIN_DURABILITY", "")),
                read_urls=tuple(env.get("BRAIN_DB_READ_URL", "").split()),
                cache_dir=cache_dir(),
            ),
            capture=capture,
            embedder=profile,
            models=model_settings(env),
            searches_at_once=_count(env, "BRAIN_SEARCHES_AT_ONCE", SEARCHES_AT_ONCE),
        )


def model_settings(
    environ: Mapping[str, str] | None = None,
    *,
    embedder: str | None = None,
    reranker: str | None = None,
) -> ModelSettings:
    """The models' settings from BRAIN_EMBEDDER, BRAIN_EMBED_*, BRAIN_RERANKER, BRAIN_RERANK_*
    BRAIN_MODEL_TIMEOUT and BRAIN_RERANK_BUDGET; `embedder` and `reranker` (an eval's flags)
    replace the first
    two. ConfigError for a server profile without its URL and model."""
    env = environ_of(environ)
    profile, embed_folder = parse_embedder(embedder or env.get("BRAIN_EMBEDDER", "edge"))
    chosen, rerank_folder = parse_reranker(reranker or env.get("BRAIN_RERANKER", "none"))
    return ModelSettings(
        embed_folder=embed_folder,
        embed_server=_endpoint(env, "EMBED") if profile is Profile.OPENAI else None,
        dimensions=_count(env, "BRAIN_EMBED_DIMENSIONS", 384)
        if env.get("BRAIN_EMBED_DIMENSIONS", "").strip()
        else None,
        batch=_count(env, "BRAIN_EMBED_BATCH", EMBED_BATCH),
        reranker=chosen,
        rerank_folder=rerank_folder,
        rerank_server=_endpoint(env, "RERANK") if chosen is Reranking.HTTP else None,
        timeout=_positive(env, "BRAIN_MODEL_TIMEOUT", MODEL_TIMEOUT),
        rerank_budget=_positive(env, "BRAIN_RERANK_BUDGET", 0.0)
        if env.get("BRAIN_RERANK_BUDGET", "").strip()
        else None,
    )


def _endpoint(environ: Mapping[str, str], part: str) -> Endpoint:
    names = (f"BRAIN_{part}_URL", f"BRAIN_{part}_MODEL")
    missing = [n for n in names if not environ.get(n, "").strip()]
    if missing:
        which = "BRAIN_EMBEDDER=openai" if part == "EMBED" else "BRAIN_RERANKER=http"
        example = (
            "BRAIN_EMBED_URL=http://127.0.0.1:11434/v1 BRAIN_EMBED_MODEL=nomic-embed-text"
            if part == "EMBED"
            else "BRAIN_RERANK_URL=http://127.0.0.1:8080 BRAIN_RERANK_MODEL=bge-reranker-base"
        )
        raise ConfigError(f"{which} needs {' and '.join(missing)}: e.g. {example}")
    url = environ[names[0]].strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{names[0]}={url!r} is not an http:// or https:// URL")
    key = environ.get(f"BRAIN_{part}_API_KEY", "").strip() or None
    return Endpoint(url.rstrip("/"), environ[names[1]].strip(), key)


def _positive(environ: Mapping[str, str], name: str, default: float) -> float:
    value = _number(environ, name, default)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name}={environ.get(name)!r} must be a number of seconds above 0")
    return value


def server_settings(
    host: str | None = None,
    port: int | None = None,
    limits: Limits | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServerSettings:
    """The server's settings: explicit flags, else BRAIN_BIND_HOST and BIND_PORT; the token,
    rate limit and envelope from BRAIN_API_TOKEN, BRAIN_RATE_* and BRAIN_ENVELOPE; the names
    the server answers to beside loopback's and the proxies it believes, from
    BRAIN_ALLOWED_HOSTS and BRAIN_TRUSTED_PROXIES (comma-separated)."""
    env = environ_of(environ)
    rate = RateLimit(
        rate=_number(env, "BRAIN_RATE_LIMIT", DEFAULT_RATE),
        burst=int(_number(env, "BRAIN_RATE_BURST", DEFAULT_BURST)),
        limit_loopback=_flag(env, "BRAIN_RATE_LIMIT_LOOPBACK"),
    )
    return ServerSettings(
        host=host or env.get("BRAIN_BIND_HOST") or DEFAULT_HOST,
        port=port if port is not None else _count(env, "BIND_PORT", DEFAULT_PORT),
        token=env.get("BRAIN_API_TOKEN") or None,
        limits=limits or Limits(),
        rate_limit=rate,
        envelope=_envelope(env.get("BRAIN_ENVELOPE")),
        allowed_hosts=_names(env, "BRAIN_ALLOWED_HOSTS"),
        trusted_proxies=_names(env, "BRAIN_TRUSTED_PROXIES"),
    )


def default_workers() -> int:
    """`serve`'s workers by default: one per core this process may run on, at most
    MAX_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def evals_dir(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """BRAIN_EVALS_DIR, else `.nexusbrain-evals` at the git root above `cwd`, else in `cwd`."""
    env = environ_of(environ)
    if env.get("BRAIN_EVALS_DIR"):
        return Path(env["BRAIN_EVALS_DIR"]).expanduser()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder / ".nexusbrain-evals"
    return here / ".nexusbrain-evals"


def answer_settings(environ: Mapping[str, str] | None = None) -> AnswerSettings:
    """BRAIN_ANSWER_BASE_URL and BRAIN_ANSWER_MODEL (both needed), BRAIN_ANSWER_API_KEY (else
    OPENAI_API_KEY), BRAIN_ANSWER_JUDGE_MODEL, and BRAIN_ANSWER_PRICE_IN / _OUT."""
    env = environ_of(environ)
    missing = [n for n in ("BRAIN_ANSWER_BASE_URL", "BRAIN_ANSWER_MODEL") if not env.get(n)]
    if missing:
        raise ConfigError(
            f"answer generation needs {' and '.join(missing)}: e.g. "
            "BRAIN_ANSWER_BASE_URL=http://127.0.0.1:8000/v1 BRAIN_ANSWER_MODEL=gpt-4o-mini"
        )
    priced = env.get("BRAIN_ANSWER_PRICE_IN") or env.get("BRAIN_ANSWER_PRICE_OUT")
    return AnswerSettings(
        base_url=env["BRAIN_ANSWER_BASE_URL"].rstrip("/"),
        model=env["BRAIN_ANSWER_MODEL"],
        api_key=env.get("BRAIN_ANSWER_API_KEY") or env.get("OPENAI_API_KEY") or None,
        judge_model=env.get("BRAIN_ANSWER_JUDGE_MODEL") or None,
        price_in=_price(env, "BRAIN_ANSWER_PRICE_IN") if priced else None,
        price_out=_price(env, "BRAIN_ANSWER_PRICE_OUT") if priced else None,
    )


def child_environment(
    drop: tuple[str, ...] = (), extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """This process's environment for a child process, without `drop`, with `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra or {})
    return env


def cache_dir() -> Path:
    """The user's cache folder for nexusbrain (PostgreSQL replicas' dense indexes)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("nexusbrain"))


def _durability(value: str) -> Durability:
    try:
        return Durability(value.strip().lower() or Durability.FULL.value)
    except ValueError:
        choices = ", ".join(d.value for d in Durability)
        raise ConfigError(f"BRAIN_DURABILITY={value!r} is not one of: {choices}") from None


def _names(environ: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in environ.get(name, "").split(",") if part.strip())


def _envelope(name: str | None) -> Envelope:
    from nexusbrain.envelopes import DEFAULT_ENVELOPE, envelope_named

    return envelope_named(name or DEFAULT_ENVELOPE)


def _count(environ: Mapping[str, str], name: str, default: int) -> int:
    value = environ.get(name, "").strip()
    if not value:
        return default
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{name}={value!r} is not a positive whole number, e.g. {default}")
    return int(value)


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None


def _price(environ: Mapping[str, str], name: str) -> float:
    try:
        value = float(environ.get(name, ""))
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"{name}={environ.get(name, '')!r} must be a price in USD per million tokens, "
            "e.g. 0.15 (set both BRAIN_ANSWER_PRICE_IN and BRAIN_ANSWER_PRICE_OUT)"
        )
    return value


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}={value!r} is not a boolean: use 1/0, true/false, yes/no or on/off")
