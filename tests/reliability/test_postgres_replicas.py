"""Stateless replicas: two real servers over one PostgreSQL schema. A write acknowledged by one
is seen by the next search on the other (their caches follow the change log); the bearer
token and the rate limit work the same on each; /health reports the database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..pgserver import Server
from .replicas import Replica

TOKEN = "replica-token-0123456789-abcdefghij-XYZ"


@pytest.fixture
def pair(postgres: Server, tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    url = postgres.url()
    with Replica(url, tmp_path / "a.log") as a, Replica(url, tmp_path / "b.log") as b:
        yield a, b


def _found(http: httpx.Client, query: str, mode: str = "balanced") -> str:
    """The texts of the hits, one after the other."""
    response = http.get("/search", params={"q": query, "mode": mode, "k": 5})
    assert response.status_code == 200, response.text
    return "\n".join(hit["text"] for hit in response.json()["hits"])


def test_a_write_on_one_replica_is_seen_by_the_next_search_on_the_other(
    pair: tuple[Replica, Replica],
) -> None:
    a, b = pair
    with a.client() as left, b.client() as right:
        for n in range(12):
            writer, reader = (left, right) if n % 2 else (right, left)
            text = f"replicated memory number{n} about zebra{n}"
            assert writer.post("/add", json={"text": text}).status_code == 200
            for mode in ("conservative", "balanced", "tokenmax"):
                assert text in _found(reader, f"zebra{n}", mode), (n, mode)
        note = {"title": "Plan", "uri": "plan.md", "content": "# Plan\n\nShip the walrus."}
        first = left.post("/ingest/markdown", json=note).json()
        assert "Ship the walrus." in _found(right, "walrus")
        note["content"] = "# Plan\n\nShip the narwhal."
        assert right.post("/ingest/markdown", json=note).json()["status"] == "updated"
        assert "walrus" not in _found(left, "walrus")
        assert "Ship the narwhal." in _found(left, "narwhal")
        assert left.delete(f"/documents/{first['id']}").status_code == 200
        assert "narwhal" not in _found(right, "narwhal")
        edge = {"relationships": [{"from": "Ada", "type": "works_at", "to": "Acme"}]}
        assert right.post("/ingest", json=edge).status_code == 200
        relations = left.get("/graph/relations", params={"from": "Ada"}).json()
        assert [r["to"] for r in relations["relationships"]] == ["Acme"]
        assert left.get("/stats").json()["documents"] == right.get("/stats").json()["documents"]


def test_health_reports_the_database(pair: tuple[Replica, Replica]) -> None:
    for replica in pair:
        with replica.client() as http:
            answer = http.get("/health")  # after a round trip to the database; down, a 503
            assert (answer.status_code, answer.json()) == (200, {"status": "ok"})


def test_the_token_and_the_rate_limit_hold_on_every_replica(
    postgres: Server, tmp_path: Path
) -> None:
    url = postgres.url()
    env = {
        "BRAIN_API_TOKEN": TOKEN,
        "BRAIN_RATE_LIMIT": "0.05",
        "BRAIN_RATE_BURST": "4",
        "BRAIN_RATE_LIMIT_LOOPBACK": "1",
    }
    with Replica(url, tmp_path / "a.log", env) as a, Replica(url, tmp_path / "b.log", env) as b:
        for replica in (a, b):
            with replica.client() as http:
                assert http.get("/stats").status_code == 401  # /health is the open probe
                assert (
                    http.get("/stats", headers={"Authorization": "Bearer nope"}).status_code == 401
                )
            with replica.client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                statuses = [http.get("/search", params={"q": "x"}).status_code for _ in range(8)]
                assert statuses[0] == 200 and statuses[-1] == 429
                limited = http.get("/search", params={"q": "x"})
                assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
