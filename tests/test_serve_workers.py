"""`serve --workers N`: N forked processes answer on one socket, each with a brain of its own on
the same database; the first process supervises them (real processes, a real socket)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from nexusbrain import discovery

from .test_cli_client import cli_process, start, stop


def workers_of(process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    deadline = time.monotonic() + 30
    while len(found := psutil.Process(process.pid).children()) < 2:
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.05)
    return found


def test_two_workers_answer_alike_and_stop_with_the_server(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2")
    try:
        workers = workers_of(process)
        assert len(workers) == 2
        added = cli_process("add", "the signing key is in the vault", db=db)
        assert added.code == 0, added.stderr
        for _ in range(12):  # a new connection each: either worker may answer
            found = cli_process("search", "signing key", "--json", db=db)
            assert found.code == 0 and b"the signing key is in the vault" in found.stdout
    finally:
        out = stop(process).decode()
    assert process.returncode == 0
    assert out.startswith("nexusbrain ") and discovery.find(db) is None
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)


def test_a_worker_that_dies_stops_the_server(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2")
    first, second = workers_of(process)
    first.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert discovery.find(db) is None
    second.wait(timeout=10)


def owners(workers: list[psutil.Process], clients: list[int]) -> list[int]:
    """Which worker (its index) holds the connection from each client port (-1: none)."""
    ports = {port: n for n, port in enumerate(clients)}
    found = [-1] * len(clients)
    for index, worker in enumerate(workers):
        for conn in worker.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_ESTABLISHED and conn.raddr and conn.raddr.port in ports:
                found[ports[conn.raddr.port]] = index
    return found


def connected(port: int, count: int) -> list[http.client.HTTPConnection]:
    """`count` kept-alive connections, made at once, each answered once."""
    clients = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(count)]
    for client in clients:
        client.connect()
    for client in clients:
        client.request("GET", "/health")
    for client in clients:
        answer = client.getresponse()
        assert answer.status == 200, answer.read()
        answer.read()
    return clients


def ports(clients: list[http.client.HTTPConnection]) -> list[int]:
    return [int(client.sock.getsockname()[1]) for client in clients]


def test_connections_made_at_once_are_spread_evenly_over_the_workers(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2")
    try:
        workers = workers_of(process)
        info = discovery.find(db)
        assert info is not None
        port = int(info.url.rsplit(":", 1)[1])
        # both workers are accepting once a second connection, made while the first is
        # open, lands on the other worker (a busier worker waits for an idle sibling)
        deadline = time.monotonic() + 30
        while True:
            first = connected(port, 1)
            second = connected(port, 1)
            if len(set(owners(workers, ports(first + second)))) == 2:
                break
            assert time.monotonic() < deadline, "the second worker never took a connection"
            for client in first + second:
                client.close()
            time.sleep(0.1)
        for client in first + second:
            client.close()
        for _ in range(3):  # eight clients connect at once; each worker keeps four
            clients = connected(port, 8)
            used = ports(clients)
            held = owners(workers, used)
            assert sorted(held) == [0, 0, 0, 0, 1, 1, 1, 1], held
            for client in clients:
                client.close()
            while max(owners(workers, used)) >= 0:
                time.sleep(0.05)  # until both workers have seen their connections go
    finally:
        stop(process)


def test_a_stopped_worker_leaves_no_connection_unanswered(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2")
    try:
        first, second = workers_of(process)
        info = discovery.find(db)
        assert info is not None
        port = int(info.url.rsplit(":", 1)[1])
        connected(port, 2)  # both workers are up (one may have taken both)
        second.send_signal(signal.SIGSTOP)
        try:
            # the first worker holds more than its stopped sibling, waits its patience
            # for it each time, then takes the connection
            clients = connected(port, 6)
            assert set(owners([first, second], ports(clients))) == {0}
        finally:
            second.send_signal(signal.SIGCONT)
    finally:
        stop(process)


def pinned(port: int, workers: list[psutil.Process]) -> list[http.client.HTTPConnection]:
    """One kept-alive connection held by each worker, in the workers' order."""
    deadline = time.monotonic() + 30
    while True:
        clients = connected(port, 2)
        held = owners(workers, ports(clients))
        if sorted(held) == [0, 1]:
            return [clients[held.index(0)], clients[held.index(1)]]
        assert time.monotonic() < deadline, f"the connections landed on {held}"
        for client in clients:
            client.close()
        time.sleep(0.1)


def rpc(
    client: http.client.HTTPConnection, message: dict[str, object], headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """One JSON-RPC message POSTed to /mcp on this connection: status, headers, body."""
    client.request(
        "POST",
        "/mcp",
        json.dumps(message),
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        | headers,
    )
    answer = client.getresponse()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()


def tool(
    client: http.client.HTTPConnection, session: dict[str, str], name: str, **arguments: object
) -> dict[str, Any]:
    """A tool call on this connection: its structured answer, checked to be no error."""
    message = {"name": name, "arguments": arguments}
    status, _, body = rpc(
        client, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": message}, session
    )
    assert status == 200, body
    result = json.loads(body)["result"]
    assert not result["isError"], result
    answer: dict[str, Any] = result["structuredContent"]
    return answer


def test_an_mcp_session_is_answered_by_whichever_worker_takes_each_call(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2", "--mcp")
    try:
        workers = workers_of(process)
        info = discovery.find(db)
        assert info is not None and info.mcp
        on = pinned(int(info.url.rsplit(":", 1)[1]), workers)
        status, headers, body = rpc(
            on[0],
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
            {},
        )
        assert status == 200, body
        assert json.loads(body)["result"]["serverInfo"]["name"] == "nexusbrain"
        session = {"MCP-Protocol-Version": "2025-06-18"}
        if "mcp-session-id" in headers:  # the server keeps none (stateless): any worker answers
            session["Mcp-Session-Id"] = headers["mcp-session-id"]
        notified = rpc(on[1], {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        assert notified[0] == 202, notified
        for n in range(6):  # each call on the other worker than the last
            worker = on[n % 2]
            text = f"note {n}: the relay key of rack {n} is in drawer {n + 10}"
            tool(worker, session, "remember", text=text)
            found = tool(on[(n + 1) % 2], session, "search", query=f"rack {n} drawer {n + 10}", k=1)
            assert [hit["text"] for hit in found["hits"]] == [text]  # stored by the other worker
        assert set(owners(workers, ports(on))) == {0, 1}  # both answered, on their connections
    finally:
        stop(process)


def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    db = tmp_path / "brain.db"
    process = start(db, "--workers", "2")
    workers = workers_of(process)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, [w.pid for w in alive]
    assert discovery.find(db) is None  # its file names a process that is gone
