"""The models: which the brain uses (`models`, `models check`), and the ones it serves to
others in the shapes model servers share: OpenAI's `POST /v1/embeddings` and `GET /v1/models`,
and the `POST /v1/rerank` of Text Embeddings Inference, Jina, Cohere and llama.cpp's server.
A team can run one model host and point its replicas at it (docs/design/models.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nexusbrain.operations.args import HAS_WORDS, Arg, Kind
from nexusbrain.operations.spec import Command, Http, Operation, View

if TYPE_CHECKING:
    from nexusbrain.brain import Brain

MAX_INPUTS = 2048  # texts in one request, as OpenAI allows


def models(brain: Brain) -> View:
    from nexusbrain import views

    return views.models_report(brain.models.report())


def models_check(brain: Brain) -> View:
    from nexusbrain import views

    return views.models_check(brain.models.check())


def embeddings(
    brain: Brain,
    *,
    texts: str | Sequence[str],
    model: str,
    encoding_format: str,
    dimensions: int | None,
    user: str | None,
) -> View:
    from nexusbrain import views
    from nexusbrain.errors import InvalidInput

    given = [texts] if isinstance(texts, str) else list(texts)
    model_id, vectors = brain.models.embed(given, model)
    if dimensions is not None and dimensions != vectors.shape[1]:
        raise InvalidInput(
            f"dimensions={dimensions}: {model_id}'s vectors have {vectors.shape[1]} and cannot"
            " be shortened; leave dimensions out"
        )
    return views.embeddings(model_id, vectors, encoding_format, given)


def rerank(
    brain: Brain,
    *,
    query: str,
    documents: Sequence[str],
    model: str,
    top_n: int | None,
    return_documents: bool,
) -> View:
    from nexusbrain import views

    model_id, scores = brain.models.rerank(query, documents, model)
    return views.reranked(model_id, scores, top_n, query, documents, with_text=return_documents)


def served(brain: Brain) -> View:
    from nexusbrain import views

    return views.served(brain.models.served())


MODELS = Operation(
    "models",
    models,
    http=Http("GET", "/models", "models", "ModelsOut"),
    cli=Command(
        "models",
        """The embedder and reranker in use, with their dimensions; the vectors stored per
        model, how much of the brain the search model covers, and a model switch under way.

        \b
        Example:
          nexusbrain models
          nexusbrain models check --json
        """,
    ),
)

MODELS_CHECK = Operation(
    "models_check",
    models_check,
    http=Http("POST", "/models/check", "models", "ModelChecksOut"),
    cli=Command(
        "models check",
        """Call the embedder and the reranker once each: latency, dimension, or what failed.

        \b
        Example:
          BRAIN_EMBEDDER=openai BRAIN_EMBED_URL=http://127.0.0.1:11434/v1 \\
            BRAIN_EMBED_MODEL=nomic-embed-text nexusbrain models check
        """,
    ),
)

MODEL = Arg(
    "model",
    required=True,
    min_length=1,
    max_length=500,
    help="a model this server has (GET /v1/models): its id, or its profile's name",
    example="edge",  # the default profile, which most servers run
)

EMBEDDINGS = Operation(
    "embeddings",
    embeddings,
    (
        Arg(
            "texts",
            Kind.TEXT_OR_TEXTS,
            required=True,
            wire="input",
            min_length=1,
            max_length=MAX_INPUTS,
            help=f"a text, or a list of at most {MAX_INPUTS}",
            example="how do I rotate the api keys",
        ),
        MODEL,
        Arg(
            "encoding_format",
            default="float",
            choices=("float", "base64"),
            help="float: lists of numbers; base64: little-endian float32 bytes",
        ),
        Arg("dimensions", Kind.INT, ge=1, help="the model's own (vectors are not shortened)"),
        Arg("user", max_length=500, help="ignored (OpenAI's end-user id)"),
    ),
    http=Http(
        "POST",
        "/v1/embeddings",
        "models",
        "EmbeddingsOut",
        body="EmbeddingsIn",
        errors=(404, 503),
        doc="OpenAI's embeddings request and answer, from this server's embedder.",
    ),
)

RERANK = Operation(
    "rerank",
    rerank,
    (
        Arg("query", required=True, max_length=4000, schema=HAS_WORDS, help="what to rank for"),
        Arg(
            "documents",
            Kind.TEXTS,
            required=True,
            max_length=MAX_INPUTS,
            help="the texts to score",
        ),
        MODEL,
        Arg("top_n", Kind.INT, ge=1, help="how many results (default: every document)"),
        Arg("return_documents", Kind.BOOL, default=False, help="each result with its text"),
    ),
    http=Http(
        "POST",
        "/v1/rerank",
        "models",
        "RerankedOut",
        body="RerankIn",
        errors=(404, 503),
        doc="The rerank request and answer Text Embeddings Inference, Jina, Cohere and "
        "llama.cpp's server share, from this server's reranker.",
    ),
)

SERVED = Operation(
    "served_models",
    served,
    http=Http(
        "GET",
        "/v1/models",
        "models",
        "ServedModelsOut",
        doc="OpenAI's list of models: the embedder and reranker this server answers with.",
    ),
)

OPERATIONS = (MODELS, MODELS_CHECK, EMBEDDINGS, RERANK, SERVED)
GROUP = "Which models the brain uses, and a check of each."
