"""The page a browser fetches first (`GET /`), built once per address instead of once per visitor.

Gradio builds that page for every request: a copy of the whole page's config (250 KB here) with every file link
rewritten to the address the request came by, and the API's description, then the template. That is 20-50 ms of the
server's one event loop per visitor, and a class opening the page at once waits for thirty of them in a row
(`benchmarks/classroom.py`, whose visitors fetch the page as a browser does: 30 visitors' first verdicts took
4.6-5.4 s of server CPU with the page built for each, 3.4-3.8 s with it built once; AMD EPYC, 2 cores). The page
never changes once the app is up (no login, no deep links: `launch.ClosedRoutes`), so its bytes depend only on what
the request says about its address and the encodings it accepts; those are the cache's key, and a handful of
addresses is all a server sees (its own, a Space's proxy).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

# what Gradio reads to write the page's addresses (`route_utils.get_request_origin`), and the body's encoding
KEY_HEADERS = (b"host", b"x-forwarded-host", b"x-gradio-server", b"x-forwarded-proto", b"accept-encoding")
ADDRESSES = 8  # distinct keys kept; the oldest goes first (a client could invent Host headers without end)


class PageCache:
    """ASGI middleware: the first `GET /` for a key is Gradio's, its 200 answer is kept, later ones are replayed.
    Requests that come while the first is being built wait for it (a class arrives at once: without that wait,
    all thirty miss)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.kept: OrderedDict[tuple, list[dict]] = OrderedDict()
        self.building: dict[tuple, asyncio.Future] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        key = _key(scope)
        if key is None:
            await self.app(scope, receive, send)
        elif key in self.kept:
            self.kept.move_to_end(key)
            await _replay(self.kept[key], send)
        elif key in self.building:
            messages = await asyncio.shield(self.building[key])
            if messages is None:  # the first build failed: Gradio answers this one, as it answers any
                await self.app(scope, receive, send)
            else:
                await _replay(messages, send)
        else:
            await self._build(key, scope, receive, send)

    async def _build(self, key: tuple, scope: Any, receive: Any, send: Any) -> None:
        """Gradio answers, the answer is kept when whole and fine, and whoever waited for it gets it."""
        said: list[dict] = []
        ready = self.building[key] = asyncio.get_running_loop().create_future()

        async def keep(message: dict) -> None:
            said.append(message)
            await send(message)

        try:
            await self.app(scope, receive, keep)
        finally:
            whole = _whole_and_ok(said)
            if whole:
                self.kept[key] = said
                while len(self.kept) > ADDRESSES:
                    self.kept.popitem(last=False)
            del self.building[key]
            ready.set_result(said if whole else None)


async def _replay(messages: list[dict], send: Any) -> None:
    for message in messages:
        await send(message)


def _key(scope: Any) -> tuple | None:
    """What the page's bytes depend on, or None for a request this cache leaves alone (anything but a plain
    `GET /`, or an app with a login, whose page names its user)."""
    if scope.get("type") != "http" or scope.get("method") != "GET" or scope.get("path") != "/":
        return None
    if scope.get("query_string"):
        return None  # `?page=`, `?deep_link=`, …: Gradio's to answer
    app = scope.get("app")
    if getattr(app, "auth", None) is not None or getattr(app, "auth_dependency", None) is not None:
        return None
    headers = dict(scope.get("headers") or [])
    return (scope.get("scheme"), scope.get("root_path", ""), *(headers.get(h, b"") for h in KEY_HEADERS))


def _whole_and_ok(said: list[dict]) -> bool:
    """Whether `said` is one complete 200 answer that sets no cookie."""
    if not said or said[0].get("type") != "http.response.start" or said[0].get("status") != 200:
        return False
    if any(name.lower() == b"set-cookie" for name, _ in said[0].get("headers", [])):
        return False
    last = said[-1]
    return last.get("type") == "http.response.body" and not last.get("more_body", False)
