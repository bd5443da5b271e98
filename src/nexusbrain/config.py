"""Settings, with their defaults committed here. Environment variables override a few of them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from nexusbrain.embeddings.profiles import Profile, parse_profile
from nexusbrain.errors import ConfigError
from nexusbrain.ingest.chunking import ChunkingConfig

DEFAULT_PORT = 8765
DEFAULT_HOST = "127.0.0.1"
CAPTURE_MAX_ROWS = 100_000
POSTINGS_CACHE_MB = 32


@dataclass(frozen=True, slots=True)
class Limits:
    """Input limits. Anything over them is refused with a clear error, and nothing is stored."""

    max_document_bytes: int = 10 * 1024 * 1024
    max_request_bytes: int = 16 * 1024 * 1024
    max_import_bytes: int = 4 * 1024 * 1024 * 1024
    max_query_chars: int = 4_000
    max_k: int = 1_000
    max_budget_tokens: int = 200_000


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """BM25 over FTS5: the weights of the chunk's text, heading-path and context columns."""

    text_weight: float = 1.0
    heading_weight: float = 0.5
    context_weight: float = 0.3
    drop_stopwords: bool = True
    extended_stopwords: bool = True  # also drop question and function words (what, did...)
    # A query term found in at least this share of the chunks (and in at least
    # common_min_rows of them) only adds to the score of chunks that hold a rarer query term:
    # Elasticsearch's "common terms" cut-off. 0 turns it off. See docs/tuning.md.
    common_share: float = 0.15
    common_min_rows: int = 1000
    # Score BM25 in numpy from FTS5's postings (the same rows and scores as FTS5's bm25(),
    # several times faster on frequent words); False ranks with bm25() inside FTS5.
    from_postings: bool = True
    # Memory for the scored postings of recent query words (12 bytes a posting);
    # $BRAIN_POSTINGS_CACHE_MB. About 30 MB holds every word of 200 queries at 100k chunks.
    postings_cache_mb: int = POSTINGS_CACHE_MB


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """Opt-in capture of every search and recall, for replay evaluation."""

    enabled: bool = False
    max_rows: int = CAPTURE_MAX_ROWS  # oldest rows go first; $BRAIN_CAPTURE_MAX_ROWS


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
class Settings:
    db_path: Path
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    limits: Limits = field(default_factory=Limits)
    lexical: LexicalConfig = field(default_factory=LexicalConfig)
    capture: CaptureConfig = field(default_factory=CaptureConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    embedder: Profile = Profile.EDGE
    default_domain: str = "default"

    @classmethod
    def from_env(
        cls, db_path: str | Path | None = None, environ: Mapping[str, str] | None = None
    ) -> Settings:
        env = os.environ if environ is None else environ
        capture = CaptureConfig(
            enabled=_flag(env, "BRAIN_CAPTURE"),
            max_rows=_count(env, "BRAIN_CAPTURE_MAX_ROWS", CAPTURE_MAX_ROWS),
        )
        embedder = parse_profile(env.get("BRAIN_EMBEDDER", Profile.EDGE.value))
        lexical = LexicalConfig(
            postings_cache_mb=_count(env, "BRAIN_POSTINGS_CACHE_MB", POSTINGS_CACHE_MB)
        )
        return cls(
            db_path=resolve_db_path(db_path, env),
            lexical=lexical,
            capture=capture,
            embedder=embedder,
        )


def resolve_db_path(explicit: str | Path | None, environ: Mapping[str, str]) -> Path:
    """--db, else BRAIN_DB_PATH, else brain.db in the platform's user data directory."""
    if explicit:
        return Path(explicit).expanduser()
    if environ.get("BRAIN_DB_PATH"):
        return Path(environ["BRAIN_DB_PATH"]).expanduser()
    return Path(platformdirs.user_data_dir("nexusbrain")) / "brain.db"


def _count(environ: Mapping[str, str], name: str, default: int) -> int:
    value = environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{name}={value!r} is not a positive whole number, e.g. {default}")
    return int(value)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}={value!r} is not a boolean: use 1/0, true/false, yes/no or on/off")
