"""Signing a browser in when the server has a token.

/app/login takes the token once and keeps it in an HttpOnly, SameSite=Strict cookie, so the
pages and their scripts never hold it. The API's Guard accepts that cookie for reads only
(GET, HEAD): the UI only reads, and a page of another origin on the same site cannot write
with it. Writes still need `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from nexusbrain.web.pages import PAGE_CSP, Pages

TOKEN_COOKIE = "nexusbrain_token"
LOGIN_PATH = "/app/login"
LOGOUT_PATH = "/app/logout"
OPEN_PATHS = frozenset({LOGIN_PATH, LOGOUT_PATH})  # the Guard lets these through
LOGIN_CSP = PAGE_CSP.replace("style-src 'self'", "style-src 'unsafe-inline'")


def login_routes(router: APIRouter, pages: Pages, token: str | None) -> None:
    @router.get("/login")
    def login_form(request: Request, next: str = "/app") -> Response:
        if not token:
            return RedirectResponse(safe_next(next), status_code=303)
        return pages.render(request, "login.html", csp=LOGIN_CSP, next=safe_next(next), error="")

    @router.post("/login")
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", errors="replace"))
        given = form.get("token", [""])[0]
        target = safe_next(form.get("next", ["/app"])[0])
        if not token:
            return RedirectResponse(target, status_code=303)
        if not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
            error = "That is not this server's token (BRAIN_API_TOKEN)."
            return pages.render(
                request, "login.html", csp=LOGIN_CSP, status_code=401, next=target, error=error
            )
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            TOKEN_COOKIE,
            given,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    @router.post("/logout")
    def logout() -> Response:
        response = RedirectResponse(LOGIN_PATH, status_code=303)
        response.delete_cookie(TOKEN_COOKIE, httponly=True, samesite="strict")
        return response


def safe_next(target: str) -> str:
    """Where to go after signing in: a page of the UI, never another site."""
    if target.startswith("/app") and not target.startswith(("//", "/\\")) and "\\" not in target:
        return target
    return "/app"
