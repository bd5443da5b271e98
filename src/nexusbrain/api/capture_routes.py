"""GET /captures: the searches and recalls the server captured (BRAIN_CAPTURE=1), as NDJSON
for `nexusbrain eval replay`; the same records as `nexusbrain eval captures`."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from nexusbrain.api.openapi import answers
from nexusbrain.brain import Brain


def capture_routes(app: FastAPI, brain: Brain) -> None:
    @app.get("/captures", tags=["system"], **answers(None))
    def captures() -> StreamingResponse:
        """Captured queries, one JSON object a line, results with stable ids."""

        def lines() -> Iterator[bytes]:
            for record in brain.admin.captured():
                yield orjson.dumps(record) + b"\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")
