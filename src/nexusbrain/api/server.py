"""Running the API under uvicorn."""

from __future__ import annotations

import uvicorn

from nexusbrain.api.app import create_app
from nexusbrain.api.guard import ServerSettings, check_bind
from nexusbrain.brain import Brain


def run(brain: Brain, *, host: str, port: int, log_level: str = "info") -> None:
    settings = ServerSettings.from_env(host, port, brain.settings.limits)
    check_bind(settings)
    app = create_app(brain, settings)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)
