"""The brains an evaluation runs against, behind the `nexusbrain.evals.targets` protocols: a
Brain in process (an existing database, or a scratch one per corpus scope) or a running server
over HTTP. This is interface code: it parses nothing and scores nothing, it only adapts."""

from __future__ import annotations

import secrets
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from nexusbrain.brain import Brain
from nexusbrain.config import (
    CaptureConfig,
    Profile,
    Reranking,
    Settings,
    model_settings,
    parse_embedder,
)
from nexusbrain.environment import api_token
from nexusbrain.errors import InvalidInput
from nexusbrain.evals.answer import Passage
from nexusbrain.evals.targets import Retrieved, SearchRequest, Workspace, WorkspaceFactory
from nexusbrain.ingest.conversation import Session
from nexusbrain.records import Hit, SearchFilters, SearchMode
from nexusbrain.retrieval.confidence import band, band_of
from nexusbrain.retrieval.modes import preset
from nexusbrain.storage import postgres


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """An evaluation's --embedder and --reranker: values as BRAIN_EMBEDDER and BRAIN_RERANKER
    take them, replacing those variables (None: the variable's, else the default). The rest
    (a server's URL and model, a key) still comes from BRAIN_EMBED_* and BRAIN_RERANK_*."""

    embedder: str | None = None
    reranker: str | None = None

    def tag(self) -> str | None:
        """The choice in a run id: "edge+quality" (None when neither is given)."""
        if self.embedder is None and self.reranker is None:
            return None
        return f"{self.embedder or 'env'}+{self.reranker or 'env'}".replace("/", "_")

    def apply(self, settings: Settings) -> Settings:
        if self.embedder is None and self.reranker is None:
            return settings
        models = model_settings(embedder=self.embedder, reranker=self.reranker)
        if self.embedder is None:
            return replace(settings, models=models)
        return replace(settings, embedder=parse_embedder(self.embedder)[0], models=models)


def open_brain(
    db: str | Path | None, *, lexical_only: bool = False, models: ModelChoice | None = None
) -> Brain:
    """The brain at `db` (else $BRAIN_DB_URL or $BRAIN_DB_PATH, else the default) with capture
    off, so that an evaluation never records its own queries; lexical-only loads no embedding
    model and runs no reranker unless `models` names one. `models` replaces the environment's
    embedder and reranker (scratch brains only: a different embedder on an existing brain
    would start switching its model)."""
    chosen = models or ModelChoice()
    settings = replace(Settings.from_env(db), capture=CaptureConfig(enabled=False))
    settings = chosen.apply(settings)
    if lexical_only:
        reranking = settings.models.reranker if chosen.reranker else Reranking.NONE
        kept = replace(settings.models, reranker=reranking)
        settings = replace(settings, embedder=Profile.NONE, models=kept)
    brain = Brain.open(settings=settings)
    brain.admin.embed_missing()  # a slow profile embeds in the background: score every vector
    return brain


class BrainTarget:
    """A Brain in process. With `lexical_only`, searches are BM25 alone: no dense retriever and
    no pseudo-relevance feedback, whatever the mode's preset says (the lexical baseline)."""

    def __init__(self, brain: Brain, *, lexical_only: bool = False, label: str = "in-process"):
        self.brain = brain
        self.lexical_only = lexical_only
        self.label = label

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        return [_retrieved(h) for h in self._hits(query, request, path_prefix)]

    def _hits(self, query: str, request: SearchRequest, path_prefix: str | None) -> list[Hit]:
        config = None
        if self.lexical_only:
            config = preset(
                SearchMode(request.mode), dense=False, prf=False, min_relative_score=0.0
            )
        return self.brain.search(
            query,
            k=request.k,
            filters=SearchFilters(path_prefix=path_prefix),
            best_per_document=request.best_per_document,
            mode=request.mode,
            config=config,
        )

    def describe(self) -> Mapping[str, Any]:
        embedder = Profile.NONE if self.lexical_only else self.brain.stats().embedder.profile
        return {
            "target": self.label,
            "retrievers": "bm25 only" if self.lexical_only else "mode preset",
            "embedder": embedder.value,
            "models": run_models(self.brain),
        }

    def export_records(self) -> Iterator[Mapping[str, Any]]:
        return self.brain.admin.export()

    def add_markdown(self, items: Sequence[tuple[str, str, str]]) -> None:
        for uri, title, content in items:
            self.brain.ingest_markdown(content, title=title or None, uri=uri)
        self.brain.admin.embed_missing()  # the searches that follow see every vector

    def add_folder(self, folder: Path) -> int:
        report = self.brain.ingest_dir(folder)
        if report.errors:
            first = report.errors[0]
            raise InvalidInput(
                f"{len(report.errors)} file(s) of {folder} could not be ingested, "
                f"e.g. {first.path}: {first.reason}"
            )
        self.brain.admin.embed_missing()
        return report.added + report.updated + report.unchanged

    def add_sessions(self, sessions: Sequence[Session], index_roles: Sequence[str] | None) -> None:
        self.brain.ingest_conversation(sessions, index_roles=index_roles)
        self.brain.admin.embed_missing()


def run_models(brain: Brain) -> dict[str, str]:
    """The models a run's searches used, by model id: the search model's, and the reranker's
    when one ran (what the results log records and `eval compare` tells runs apart by)."""
    out = {}
    current, reranker = brain.models.current, brain.models.reranker
    if current is not None:
        out["embedder"] = current.embedder.model_id
    if reranker is not None:
        out["reranker"] = reranker.model_id
    return out


def _retrieved(hit: Hit) -> Retrieved:
    return Retrieved(
        chunk_id=hit.chunk_id,
        uri=hit.uri,
        unit=hit.unit,
        text=hit.text,
        **_sure(hit),
    )


def _sure(hit: Hit) -> dict[str, Any]:
    """The confidence of the hit's result set, in a number and a word."""
    found = hit.trace.confidence
    return {} if found is None else {"confidence": found.value, "band": band(found)}


class SpanTarget(BrainTarget):
    """A brain in process whose results are `Passage`s: they know their line spans (so that
    answers can cite them)."""

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        return [
            Passage(
                h.chunk_id,
                h.uri,
                h.unit,
                h.text,
                h.line_start,
                h.line_end,
                **_sure(h),
            )
            for h in self._hits(query, request, path_prefix)
        ]


def scratch_factory(
    *,
    lexical_only: bool = False,
    spans: bool = False,
    server: str | None = None,
    models: ModelChoice | None = None,
) -> WorkspaceFactory:
    """A WorkspaceFactory: each call opens an empty brain in a temporary folder, or, given a
    `server` database (postgresql://…), in a scratch schema of it; removed on close, with
    capture off. The embedder and reranker are `models`', else $BRAIN_EMBEDDER's and
    $BRAIN_RERANKER's (no embedder when lexical-only); with `spans`, results carry their line
    spans."""
    target = SpanTarget if spans else BrainTarget

    @contextmanager
    def scratch() -> Iterator[Workspace]:
        with tempfile.TemporaryDirectory(prefix="nexusbrain-eval-") as folder:
            db = str(Path(folder) / "scratch.db")
            if server is not None:
                db = postgres.scratch_url(server, f"eval_{secrets.token_hex(4)}")
            brain = open_brain(db, lexical_only=lexical_only, models=models)
            try:
                yield target(brain, lexical_only=lexical_only, label="scratch")
            finally:
                brain.close()
                if server is not None:
                    postgres.drop(db)

    return scratch


class HttpTarget:
    """A running `nexusbrain serve`, through GET /search and GET /export. Sends
    $BRAIN_API_TOKEN as a bearer token when it is set."""

    def __init__(self, url: str, *, timeout: float = 60.0) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InvalidInput(f"--api {url!r} is not an http(s) URL, e.g. http://127.0.0.1:8765")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.token = api_token()

    def search(
        self, query: str, request: SearchRequest, *, path_prefix: str | None = None
    ) -> list[Retrieved]:
        params: dict[str, Any] = {
            "q": query,
            "k": request.k,
            "mode": request.mode,
            "best_per_document": str(request.best_per_document).lower(),
        }
        if path_prefix:
            params["path_prefix"] = path_prefix
        with self._get("/search?" + urllib.parse.urlencode(params)) as response:
            body = orjson.loads(response.read())
        sure = _confidence(body.get("confidence"))
        return [
            Retrieved(
                int(h["chunk_id"]),
                str(h["uri"]),
                h.get("unit"),
                str(h.get("text", "")),
                **sure,
            )
            for h in body["hits"]
        ]

    def describe(self) -> Mapping[str, Any]:
        return {"target": "http", "url": self.url}

    def export_records(self) -> Iterator[Mapping[str, Any]]:
        with self._get("/export") as response:
            for line in response:
                if line.strip():
                    yield orjson.loads(line)

    def _get(self, path: str) -> Any:
        request = urllib.request.Request(self.url + path)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            raise InvalidInput(f"{self.url} answered {exc.code}: {_message(exc.read())}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise InvalidInput(f"cannot reach --api {self.url}: {exc}") from None


def _confidence(view: Any) -> dict[str, Any]:
    """The result set's confidence, in a number and a word, from a server's JSON."""
    if not isinstance(view, dict) or "value" not in view:
        return {}
    value = float(view["value"])
    return {"confidence": value, "band": band_of(value, weak=bool(view.get("weak", False)))}


def _message(body: bytes) -> str:
    try:
        return str(orjson.loads(body)["error"]["message"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace")
