"""The page a browser fetches first is built once per address (`serving/page_cache.py`): later visitors get the same
bytes without Gradio building it again, a class arriving at once waits for one build, and anything that is not a
plain `GET /` that went well is left to Gradio."""

from __future__ import annotations

import asyncio
from typing import Any

from sua_demo.ui.serving.page_cache import ADDRESSES, PageCache


class Page:
    """A stand-in for Gradio's app: counts the pages it builds; each build yields to the loop once, as a real one
    (run in a worker thread) does."""

    def __init__(self, status: int = 200, cookie: bool = False) -> None:
        self.built, self.status, self.cookie = 0, status, cookie

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.built += 1
        n = self.built
        await asyncio.sleep(0.01)
        headers = [(b"content-type", b"text/html")] + ([(b"set-cookie", b"a=b")] if self.cookie else [])
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": f"page {n} for {scope['path']}".encode()})


def get(path: str = "/", host: bytes = b"127.0.0.1:7860", query: bytes = b"", app: Any = None) -> dict:
    return {"type": "http", "method": "GET", "path": path, "query_string": query, "scheme": "http",
            "root_path": "", "headers": [(b"host", host), (b"accept-encoding", b"gzip")], "app": app}  # fmt: skip


async def fetch(cache: PageCache, scope: dict) -> bytes:
    said: list[dict] = []

    async def send(message: dict) -> None:
        said.append(message)

    await cache(scope, None, send)
    return b"".join(m.get("body", b"") for m in said)


def test_later_visitors_get_the_first_page_without_a_second_build() -> None:
    page = Page()
    cache = PageCache(page)
    first, second = asyncio.run(fetch(cache, get())), asyncio.run(fetch(cache, get()))
    assert first == second == b"page 1 for /" and page.built == 1


def test_a_class_arriving_at_once_waits_for_one_build() -> None:
    page = Page()
    cache = PageCache(page)

    async def class_of(n: int) -> list[bytes]:
        return await asyncio.gather(*(fetch(cache, get()) for _ in range(n)))

    pages = asyncio.run(class_of(30))
    assert page.built == 1 and set(pages) == {b"page 1 for /"}


def test_each_address_has_its_own_page_and_the_cache_stays_small() -> None:
    page = Page()
    cache = PageCache(page)
    a = asyncio.run(fetch(cache, get(host=b"a.example")))
    b = asyncio.run(fetch(cache, get(host=b"b.example")))
    assert a != b and page.built == 2
    for i in range(3 * ADDRESSES):
        asyncio.run(fetch(cache, get(host=f"h{i}.example".encode())))
    assert len(cache.kept) == ADDRESSES


def test_what_is_not_a_plain_page_fetch_that_went_well_is_gradios_every_time() -> None:
    for scope, page in [
        (get(query=b"deep_link=x"), Page()),
        (get(path="/config"), Page()),
        (get(), Page(status=500)),
        (get(), Page(cookie=True)),
        (get(app=type("WithLogin", (), {"auth": ("a", "b")})()), Page()),
    ]:
        cache = PageCache(page)
        asyncio.run(fetch(cache, scope))
        asyncio.run(fetch(cache, scope))
        assert page.built == 2, scope


def test_when_the_first_build_fails_those_who_waited_are_answered_by_gradio() -> None:
    page = Page(status=500)
    cache = PageCache(page)

    async def class_of(n: int) -> list[bytes]:
        return await asyncio.gather(*(fetch(cache, get()) for _ in range(n)))

    pages = asyncio.run(class_of(3))
    assert page.built == 3 and len(set(pages)) == 3 and not cache.kept and not cache.building
