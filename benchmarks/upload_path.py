"""An uploaded photo's way from the page's handler to the answers table, counted as issue 40 asks: every call that
passes the request from one room to another, among the rooms a request crosses before any work is done: `app.py`,
each module of `sua_demo/ui/`, and the engine API (`engine/`, with its `look.py`, `model_cache.py` and `jobs/`: the
one door the page may use, whose own calls into the library below are the work itself). A call inside one room, or from
the engine API down into the library, is not a hand passing the request on; each distinct (caller, callee) pair
counts once. It counts calls, it does not time them: any machine prints the same figures. Issue 40: at most 12."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "sua_demo"
STATE = {"state", "shared"}  # fetching the process's state (ui/shared) hands the request to no one
TABLE = "story_html"  # draws the answers table (sua_demo/ui/shared/story_table.py)


def room(filename: str) -> str | None:
    """The room a frame's file belongs to, or None below the engine API (the work) and outside our code."""
    path = Path(filename)
    if path == ROOT / "app.py":
        return "app.py"
    if not path.is_relative_to(PKG):
        return None
    rel = path.relative_to(PKG)
    if rel.parts[0] == "ui":
        return "/".join(rel.parts)
    return "engine API" if rel.parts[0] == "engine" else None


def hands(run) -> list[str]:  # type: ignore[no-untyped-def]
    """The distinct room-to-room calls made by `run()` up to the first call of TABLE, in the order first made."""
    seen: dict[str, None] = {}
    done = False

    def profile(frame, event, _arg):  # type: ignore[no-untyped-def]
        nonlocal done
        if done or event != "call" or frame.f_back is None:
            return
        callee, caller = room(frame.f_code.co_filename), room(frame.f_back.f_code.co_filename)
        if callee and caller and callee != caller and frame.f_code.co_name not in STATE:
            seen[f"{caller}:{frame.f_back.f_code.co_name} -> {callee}:{frame.f_code.co_name}"] = None
        done = frame.f_code.co_name == TABLE

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return list(seen)


def main() -> None:
    from sua_demo.engine.request import Request
    from sua_demo.ui.attack import actions, handlers
    from sua_demo.ui.shared import state

    actions.load(state(), "idk")  # the page has loaded its model (the warm start every upload meets)
    photo = Path(tempfile.mkdtemp()) / "face.png"
    state().engine.photo(1, 0).save(photo)

    def show() -> None:  # what app.py's `show` does with the page's values: one Request, one call
        next(iter(handlers.show_page(Request(model="idk", upload=str(photo)))))

    chain = ["ui/attack/layout.py:show -> ui/attack/handlers.py:show_page", *hands(show)]
    for i, call in enumerate(chain, 1):
        print(f"{i:2d}. {call}")
    entries = sum("-> engine API" in c for c in chain)
    print(f"{len(chain)} calls from app.py to the answers table; the engine API entered {entries} times")


if __name__ == "__main__":
    main()
