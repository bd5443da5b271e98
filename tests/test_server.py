"""The listening socket `serve` binds before uvicorn takes it over."""

from __future__ import annotations

import asyncio
import socket

from nexusbrain.api.server import listen


def test_accepted_connections_send_without_waiting_for_acks() -> None:
    """asyncio turns Nagle's algorithm off only on sockets made for TCP explicitly. Without
    that, a response written in two parts on a kept-alive connection waits for the client's
    delayed ACK (40 ms on Linux) before its second part goes out."""
    listener = listen("127.0.0.1", 0)

    async def accepted_nodelay() -> int:
        found: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            found.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname())
            value = await asyncio.wait_for(found, 10)
            writer.close()
            return value

    assert asyncio.run(accepted_nodelay()) == 1
