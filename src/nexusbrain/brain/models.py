"""The brain's models: which embedder its search uses, a switch to another, and the models it
serves to others (`/v1/embeddings`, `/v1/rerank`). docs/design/models.md.

The brain records the model its search uses (the store's `search_model` setting: its
profile, id, dimension and where it runs, never a key). When the configured embedder is
another, search keeps the recorded one, and its vectors, while a background thread makes the
configured model's for every chunk; once they cover the brain, search switches to them, the
record follows and the old model's vectors are dropped. So a switch never makes search
worse while it happens.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nexusbrain.brain.embedding import Embedding
from nexusbrain.config import Endpoint, ModelSettings, Profile, Settings
from nexusbrain.embeddings import Embedder, load_embedder
from nexusbrain.embeddings.base import Vectors
from nexusbrain.embeddings.profiles import centred, embeds_in_background
from nexusbrain.embeddings.reference import reference_vector
from nexusbrain.embeddings.remote import RemoteEmbedder
from nexusbrain.errors import BrainError, InvalidInput, NotFound
from nexusbrain.rerankers import Reranker
from nexusbrain.storage.base import Backend, DenseIndex

log = logging.getLogger(__name__)

KEY = "search_model"  # the store setting that records the search model


@dataclass(frozen=True, slots=True)
class Recorded:
    """An embedder as the brain records it: enough to load it again (the key excepted, which
    comes from the settings of the day)."""

    profile: Profile
    model_id: str
    dim: int
    folder: str | None = None  # onnx:DIR
    url: str | None = None  # openai
    model: str | None = None
    dimensions: int | None = None

    @classmethod
    def of(cls, profile: Profile, embedder: Embedder, models: ModelSettings) -> Recorded:
        server = models.embed_server if profile is Profile.OPENAI else None
        return cls(
            profile,
            embedder.model_id,
            embedder.dim,
            folder=str(models.embed_folder) if profile is Profile.ONNX else None,
            url=server.url if server else None,
            model=server.model if server else None,
            dimensions=models.dimensions if server else None,
        )

    def load(self, models: ModelSettings) -> Embedder:
        """The embedder again; a server model takes today's key if its server is today's."""
        key = None
        if models.embed_server is not None and models.embed_server.url == self.url:
            key = models.embed_server.api_key
        given = ModelSettings(
            embed_folder=Path(self.folder) if self.folder else None,
            embed_server=Endpoint(self.url, self.model or "", key) if self.url else None,
            dimensions=self.dimensions,
            timeout=models.timeout,
        )
        embedder = load_embedder(self.profile, given, dim=self.dim)
        assert embedder is not None
        if embedder.model_id != self.model_id:
            raise NotFound(f"the model at {self.folder or self.url} is no longer {self.model_id}")
        return embedder


@dataclass(frozen=True, slots=True)
class SearchModel:
    """An embedder, its profile (which decides centring and the confidence model) and its
    dense index."""

    profile: Profile
    embedder: Embedder
    index: DenseIndex


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """One call to a model: how long it took, the dimension it answered, or what failed."""

    role: str  # embedder or reranker
    model_id: str
    ok: bool
    seconds: float
    dim: int | None = None
    error: str | None = None


class Models:
    """The search model (and the next one, during a switch), the writes' embedding, the
    reranker, and the models this brain serves."""

    def __init__(
        self,
        backend: Backend,
        embedder: Embedder | None,
        settings: Settings,
        reranker: Reranker | None,
        *,
        background: bool | None,
    ) -> None:
        self._backend = backend
        self._store = backend.documents
        self._settings = settings
        self.configured = embedder
        self.reranker = reranker
        self.current: SearchModel | None = None
        self.next: SearchModel | None = None
        self.switched_at: float | None = None
        self._lock = threading.Lock()
        self._switching = threading.Lock()  # held through a switch; close waits for it
        self._closed = False
        self._listeners: list[Callable[[SearchModel], None]] = []
        self._choose(embedder, settings)
        self.embedding = self._embedding(background)

    def _choose(self, embedder: Embedder | None, settings: Settings) -> None:
        """The search model: the recorded one while the configured one is not the same and
        has not covered the brain yet (then the configured one is `next`)."""
        if embedder is None:  # lexical only: nothing recorded changes
            return
        profile = settings.embedder
        recorded = self.recorded()
        same = recorded is not None and recorded.model_id == embedder.model_id
        if same and isinstance(embedder, RemoteEmbedder):
            assert recorded is not None
            embedder.knows_dim(recorded.dim)
        if recorded is not None and recorded.model_id != embedder.model_id:
            old = self._old(recorded)
            if old is not None:
                self.current = self._model(recorded.profile, old)
                self.next = self._model(profile, embedder)
                log.info(
                    "search uses %s while %s embeds the brain", old.model_id, embedder.model_id
                )
                return
        self.current = self._model(profile, embedder)
        if recorded is None or recorded.model_id != embedder.model_id:
            self._record(Recorded.of(profile, embedder, settings.models))

    def _old(self, recorded: Recorded) -> Embedder | None:
        """The recorded model, when it has vectors to search and can be loaded again."""
        if not self._store.vector_counts().get(recorded.model_id):
            return None
        try:
            return recorded.load(self._settings.models)
        except BrainError as exc:
            log.warning(
                "the model this brain's search used (%s) cannot be loaded (%s): switching to "
                "the configured model at once",
                recorded.model_id,
                exc.message,
            )
            return None

    def _model(self, profile: Profile, embedder: Embedder) -> SearchModel:
        centre = centred(profile)
        reference = reference_vector(embedder) if centre else None
        index = self._backend.dense_index(
            embedder.model_id, embedder.dim, centre=centre, reference=reference
        )
        return SearchModel(profile, embedder, index)

    def _embedding(self, background: bool | None) -> Embedding:
        current, coming = self.current, self.next
        if background is None:
            background = current is not None and embeds_in_background(current.profile)
        return Embedding(
            self._store,
            current.embedder if current else None,
            background=background,
            next=coming.embedder if coming else None,
            on_covered=self._covered if coming else None,
        )

    def recorded(self) -> Recorded | None:
        found = self._store.setting(KEY)
        if found is None:
            return None
        try:
            value = json.loads(found)
            return Recorded(**{**value, "profile": Profile(value["profile"])})
        except (ValueError, TypeError, KeyError):
            log.warning("the brain's record of its search model is unreadable: %r", found)
            return None

    def _record(self, value: Recorded) -> None:
        self._store.set_setting(KEY, json.dumps({**asdict(value), "profile": value.profile.value}))

    def on_switch(self, listener: Callable[[SearchModel], None]) -> None:
        """Call `listener` with the new search model when a switch completes."""
        self._listeners.append(listener)

    @property
    def profile(self) -> Profile:
        """The search model's profile (the configured one without a model)."""
        return self.current.profile if self.current else self._settings.embedder

    def _covered(self) -> None:
        self.switch()

    def switch(self) -> bool:
        """Complete a switch once the next model's vectors cover every live chunk: search
        uses it from then on, the record follows, and the old model's vectors are dropped.
        Whether it switched. The background thread that finds the brain covered runs it,
        and may be orphaned by `promote`, so closing waits for a switch under way."""
        with self._switching:
            if self._closed:
                return False
            return self._switch()

    def _switch(self) -> bool:
        with self._lock:
            coming, old = self.next, self.current
            if coming is None or old is None or self.embedding.next_missing():
                return False
            self.current, self.next = coming, None
            self.switched_at = time.monotonic()
        for listener in self._listeners:
            listener(coming)
        self.embedding.promote(background=embeds_in_background(coming.profile))
        self._record(Recorded.of(coming.profile, coming.embedder, self._settings.models))
        old.index.close()
        dropped = self._backend.drop_vectors(old.embedder.model_id)
        log.info(
            "search switched from %s to %s; %d vectors of %s dropped",
            old.embedder.model_id,
            coming.embedder.model_id,
            dropped,
            old.embedder.model_id,
        )
        return True

    def close(self) -> None:
        with self._switching:  # a switch finishes its writes before the store closes
            self._closed = True
        self.embedding.close(self._settings.models.timeout)
        for model in (self.current, self.next):
            if model is not None:
                model.index.close()

    # the models served to others

    def embed(self, texts: Sequence[str], model: str) -> tuple[str, Vectors]:
        """The configured embedder's vectors of the texts, if `model` names it (its id or
        its profile's name). NotFound names the models there are."""
        embedder = self.configured
        if embedder is None or model not in (embedder.model_id, self._settings.embedder.value):
            raise NotFound(self._unknown("embedding", model))
        return embedder.model_id, embedder.encode(list(texts))

    def rerank(self, query: str, texts: Sequence[str], model: str) -> tuple[str, list[float]]:
        """The reranker's scores of the texts for the query, if `model` names it."""
        reranker = self.reranker
        names = (reranker.model_id, self._settings.models.reranker.value) if reranker else ()
        if reranker is None or model not in names:
            raise NotFound(self._unknown("reranking", model))
        if not query.strip():
            raise InvalidInput("query is empty: give the text to rank the documents for")
        return reranker.model_id, reranker.score(query, list(texts))

    def served(self) -> list[tuple[str, str, str]]:
        """(model id, its other name, what it does) of each model this brain serves."""
        out = []
        if self.configured is not None:
            out.append((self.configured.model_id, self._settings.embedder.value, "embedding"))
        if self.reranker is not None:
            kind = self._settings.models.reranker.value
            out.append((self.reranker.model_id, kind, "rerank"))
        return out

    def _unknown(self, what: str, model: str) -> str:
        names = [
            f"{name} ({model_id})"
            for model_id, name, kind in self.served()
            if what.startswith(kind[:5])
        ]
        if not names:
            start = "BRAIN_EMBEDDER=quality" if what == "embedding" else "BRAIN_RERANKER=quality"
            return f"this server has no {what} model: start it with {start}, for example"
        return f"this server has no {what} model {model!r}; it has {', '.join(names)}"

    # what `nexusbrain models` says

    def report(self) -> dict[str, Any]:
        """The active models, the vectors stored per model, how much of the brain the search
        model covers, and a switch in progress."""
        chunks = self._store.stats().chunks
        counts = self._store.vector_counts()
        current, coming = self.current, self.next
        vectors = [
            {
                "model": model,
                "vectors": count,
                "chunks": chunks - self._store.count_missing_vectors(model),
            }
            for model, count in sorted(counts.items())
        ]
        return {
            "embedder": self._describe_embedder(),
            "reranker": self._describe_reranker(),
            "search_model": current.embedder.model_id if current else None,
            "chunks": chunks,
            "covered": chunks - self.embedding.missing() if current else None,
            "vectors": vectors,
            "switch": None
            if coming is None
            else {
                "from": current.embedder.model_id if current else None,
                "to": coming.embedder.model_id,
                "embedded_chunks": chunks - (self.embedding.next_missing() or 0),
                "chunks": chunks,
            },
        }

    def _describe_embedder(self) -> dict[str, Any] | None:
        embedder, models = self.configured, self._settings.models
        if embedder is None:
            return None
        profile = self._settings.embedder
        where = "in process"
        if profile is Profile.OPENAI and models.embed_server is not None:
            where = models.embed_server.url
        elif profile is Profile.ONNX:
            where = str(models.embed_folder)
        return {
            "profile": profile.value,
            "model_id": embedder.model_id,
            "dim": embedder.dim,
            "where": where,
            "embedding": "background" if embeds_in_background(profile) else "inline",
        }

    def _describe_reranker(self) -> dict[str, Any] | None:
        reranker, models = self.reranker, self._settings.models
        if reranker is None:
            return None
        where = "in process"
        if models.rerank_server is not None:
            where = models.rerank_server.url
        elif models.rerank_folder is not None:
            where = str(models.rerank_folder)
        return {"kind": models.reranker.value, "model_id": reranker.model_id, "where": where}

    def check(self) -> list[ModelCheck]:
        """Call each model once: its latency and the dimension it answers."""
        found = []
        if self.configured is not None:
            found.append(_timed("embedder", self.configured.model_id, self._embed_once))
        if self.reranker is not None:
            found.append(_timed("reranker", self.reranker.model_id, self._rerank_once))
        return found

    def _embed_once(self) -> int:
        assert self.configured is not None
        return int(self.configured.encode(["nexusbrain models check"]).shape[1])

    def _rerank_once(self) -> None:
        assert self.reranker is not None
        self.reranker.score("models check", ["a passage about models", "another one"])


def _timed(role: str, model_id: str, call: Callable[[], int | None]) -> ModelCheck:
    started = time.perf_counter()
    try:
        dim = call()
    except BrainError as exc:
        return ModelCheck(role, model_id, False, time.perf_counter() - started, error=exc.message)
    return ModelCheck(role, model_id, True, time.perf_counter() - started, dim)
