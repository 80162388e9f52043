"""The few Gradio-specific parts the app wires together: how user errors reach the page, the photo input."""

from __future__ import annotations

import functools
import html
import importlib
import importlib.util
import inspect
import logging
import re
import secrets
from collections.abc import Callable
from typing import Any

import gradio as gr
from gradio.utils import NamedString

from sua_demo.core.errors import SuaError

# On a ZeroGPU Space `spaces.GPU` books a GPU for each call; elsewhere calls run as they are.
gpu: Callable = importlib.import_module("spaces").GPU if importlib.util.find_spec("spaces") else (lambda fn: fn)
log = logging.getLogger("sua.app")


FILE_FORM = "give a file as the path that /gradio_api/upload returned for it (gradio_client's handle_file does this)"


class PhotoInput(gr.Image):
    """gr.Image's preview, webcam and paste, but the file reaches sua_demo.core.images.read_image untouched:
    Gradio would decode it with PIL first, before our checks (bombs, strips, formats) could give their one-line
    reasons."""

    def preprocess(self, payload: Any) -> str | None:
        if payload is None:
            return None
        if not getattr(payload, "path", None):
            raise gr.Error(f"{self.label or 'the photo'}: {FILE_FORM}", print_exception=False)
        return str(payload.path)

    def get_block_name(self) -> str:  # the browser side is gr.Image's own
        return "image"


class FileInput(gr.File):
    """gr.File as the app takes files in: by path, without the empty temporary file Gradio's own file box leaves in
    its cache for every file it is given (one per photo, never removed), and without judging a file by its name:
    the browser's picker offers `file_types`, and the app's readers check what is inside (a noise sent as base64
    over MCP arrives under a name with no extension)."""

    def _process_single_file(self, f: Any) -> Any:
        if self.type != "filepath":
            return super()._process_single_file(f)
        return NamedString(f.path)

    def get_block_name(self) -> str:  # the browser side is gr.File's own
        return "file"


CHOICE = re.compile(  # Gradio's refusal of a value that is not among a box's choices
    r"Value: (?P<value>.*?)(?: \(type: <class '\w+'>\))? is not in the list of choices: (?P<choices>\[.*\])$", re.S
)


class PublicBlocks(gr.Blocks):
    """gr.Blocks whose answers to API and MCP callers are in the app's words: Gradio's own checks of an input
    (a value not among the choices, too few values, a file path it cannot take, a payload its models reject)
    would otherwise send its internal text, with object reprs, pydantic links or server paths, to the caller."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.upload_owner: dict[str, str] = {}  # an uploaded file's path -> the session that first sent it

    async def process_api(self, block_fn: Any, inputs: list[Any], *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("iterator") is None:  # a call's first step: later steps of a stream send nothing new
            self.claim_uploads(inputs, kwargs.get("session_hash"))
        return await super().process_api(block_fn, inputs, *args, **kwargs)

    def claim_uploads(self, inputs: Any, session: str | None) -> None:
        """An upload belongs to the session that first sends it: Gradio's upload route knows no session, so the
        first use claims the file, and another caller who sends the same path (a photo's path seen in a shared
        screen or a log) is refused before any handler reads or deletes it."""
        for path in _paths(_served_as_path(inputs)):  # a served URL of an upload names its path too
            if path not in self.upload_file_set or not session:
                continue
            owner = self.upload_owner.setdefault(path, session)
            if owner != session:
                log.warning("an upload sent by a session that did not upload it was refused")
                raise gr.Error("that file was uploaded by another visitor; upload your own copy", print_exception=False)

    def validate_inputs(self, block_fn: Any, inputs: list[Any]) -> None:
        if len(inputs) < len(block_fn.inputs):
            from gradio.utils import get_function_params

            names = [name for name, *_ in get_function_params(block_fn.fn)] if block_fn.fn else []
            wanted = ", ".join(names[: len(block_fn.inputs)]) or "see /gradio_api/info"
            raise gr.Error(
                f"{block_fn.name} takes {len(block_fn.inputs)} values ({wanted}); {len(inputs)} were given. "
                "Give every value, or call it with gradio_client, which fills in the defaults.",
                print_exception=False,
            )

    async def preprocess_data(self, block_fn: Any, inputs: list[Any], state: Any, explicit_call: bool = False) -> Any:
        inputs = [_served_as_path(value) for value in inputs]
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except gr.Error as err:
            raise gr.Error(_our_words(str(err.message)), print_exception=False) from None
        except (ValueError, TypeError, OSError) as err:  # pydantic's ValidationError is a ValueError
            log.warning("input refused in %s: %s %.300s", block_fn.name, type(err).__name__, err)
            raise gr.Error(
                f"{block_fn.name}: an input is not in a form it takes (numbers as numbers, choices as one of those "
                f"listed, files as below); /gradio_api/info gives each input's form. {FILE_FORM}",
                print_exception=False,
            ) from None


def _paths(value: Any) -> list[str]:
    """The file paths in a call's raw inputs (Gradio's FileData dicts, alone or in lists)."""
    if isinstance(value, list):
        return [p for v in value for p in _paths(v)]
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        return [value["path"]]
    return []


SERVED = re.compile(r"^https?://[^/]+(?:/[^?#]*)?/gradio_api/file=(?P<path>[^?#]+)$")


def _served_as_path(value: Any) -> Any:
    """A file given as the URL of a file this server serves (`.../gradio_api/file=<path>`, or the link `optimise`
    returns, `.../gradio_api/noise/<token>/<name>`: `handouts`) becomes that path, which Gradio then checks like any
    other (it must be one this server handed out): Gradio would otherwise try to download it from itself, which its
    guard against requests to local addresses refuses."""
    if isinstance(value, list):
        return [_served_as_path(v) for v in value]
    if not isinstance(value, dict):
        return value
    from sua_demo.ui.serving.handouts import HANDOUTS

    for key in ("path", "url"):
        if not isinstance(value.get(key), str):
            continue
        if served := SERVED.match(value[key]):
            from urllib.parse import unquote

            return {**value, "path": unquote(served["path"]), "url": None}
        if value[key].startswith("http") and (handed := HANDOUTS.find(value[key])) is not None:
            return {**value, "path": str(handed), "url": None}
    return value


def root_url(request: Any) -> str:
    """The app's public address as the caller reached it (Gradio's own rule: a proxy's forwarded host, else the
    request's), for a link the caller can follow; empty, so the link is relative, when the request cannot tell."""
    from gradio import route_utils

    raw = getattr(request, "request", None)
    try:
        path, root = route_utils.get_api_call_path(request=raw), raw.scope.get("root_path")
        return route_utils.get_root_url(request=raw, route_path=path, root_path=root)
    except (AttributeError, KeyError, TypeError, ValueError):
        return ""


def _our_words(message: str) -> str:
    """Gradio's 'Value: x (type: <class 'str'>) is not in the list of choices: [...]' as a sentence naming them."""
    said = CHOICE.match(message.strip())
    if said is None:
        return message
    value = said["value"].strip()[:60]
    try:
        import ast

        choices = ", ".join(repr(c) for c in ast.literal_eval(said["choices"])[:12])
    except (ValueError, SyntaxError):
        choices = said["choices"][:300]
    return f"{value} is not one of the choices; choose one of {choices}"


MCP_CHOICE = re.compile(r"^Input validation error: (?P<value>'.*?'|\S+) is not one of (?P<choices>\[.*\])$", re.S)
MCP_FILE = "give a file as base64 data ('data:<type>;base64,<data>') or as the URL of a file this server serves"


def mcp_words(message: str) -> str:
    """An MCP tool's refusal in the app's words. The MCP library checks a call against the tool's schema and
    Gradio turns file arguments into files before our handlers run; their refusals quote jsonschema ("Input
    validation error: 'x' is not one of [...]"), Gradio ("Invalid file data format, provide a url") or Python's
    base64 module ("Incorrect padding")."""
    if said := MCP_CHOICE.match(message.strip()):
        return _our_words(f"Value: {said['value'].strip(chr(39))} is not in the list of choices: {said['choices']}")
    if message.startswith("Input validation error:"):
        return "an input is not in a form the tool takes; its schema (tools/list) gives each input's form"
    if message.startswith("Invalid file data format"):
        return f"a path on the server is not taken: {MCP_FILE}"
    if "base64" in message or "padding" in message.lower():
        return f"the file's base64 data could not be read (cut short or not base64); {MCP_FILE}"
    return message


PRIVATE = ("face_",)  # handlers whose errors may quote what a visitor typed about their person: logged by kind


LOGGED = 300  # characters of a user error's message that reach the log (a message may quote a huge input)


def _logged(fn: Callable, err: Exception) -> str:
    if fn.__name__.startswith(PRIVATE):
        log.warning("user error in %s: %s", fn.__name__, type(err).__name__)
    else:
        log.warning("user error in %s: %.*s", fn.__name__, LOGGED, err)
    return str(err)


def handler(fn: Callable) -> Callable:
    """A SuaError becomes a gr.Error (what an API or MCP caller gets), logged in one line; anything else is a bug
    and shows as one. On a ZeroGPU Space the call books a GPU."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        from sua_demo.engine.threads import serving  # torch only once a call comes

        try:
            with serving():  # one thread; a heavy job running leaves it a core (threads.py)
                return fn(*args, **kwargs)
        except SuaError as err:
            raise gr.Error(_logged(fn, err), print_exception=False) from None

    @functools.wraps(fn)
    def streamed(*args: Any, **kwargs: Any) -> Any:
        try:
            yield from fn(*args, **kwargs)
        except SuaError as err:
            raise gr.Error(_logged(fn, err), print_exception=False) from None

    return gpu(streamed if inspect.isgeneratorfunction(fn) else wrapped)


def sentence(text: str) -> str:
    """A message as a sentence: capital first, full stop last (library messages and ours alike)."""
    text = text.strip()
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("" if text[-1] in ".!?" else ".")


def message_html(text: str) -> str:
    """The page's message box: one sentence that stays until the next action (a toast would vanish)."""
    return f"<div class='message' role='alert'>⚠ {html.escape(sentence(text))}</div>" if text else ""


def shown(fn: Callable, outputs: int, at: int | None = None, keep: dict[int, Any] | None = None) -> Callable:
    """The page's own version of a handler. A gr.Error raised for a user's mistake would turn every output of the
    event into a red 'Error' pill (person and photo controls included) and say why in a toast that fades. Here its
    sentence goes to output `at` instead (None: one extra, last output, the page's message box); the other outputs
    keep what they show, or take the placeholder given for them in `keep`."""

    def failed(err: gr.Error) -> tuple[Any, ...]:
        out = [keep.get(i, gr.skip()) if keep else gr.skip() for i in range(outputs)]
        text = message_html(str(err.message))
        if at is None:
            return (*out, text)
        out[at] = text
        return tuple(out)

    def ok(value: Any) -> Any:
        value = value if isinstance(value, tuple) else (value,)
        value = (*value, gr.skip()) if at is None else value
        return value if len(value) > 1 else value[0]

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def streamed(*args: Any, **kwargs: Any) -> Any:
            try:
                for value in fn(*args, **kwargs):
                    yield ok(value)
            except gr.Error as err:
                yield failed(err)

        return streamed

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return ok(fn(*args, **kwargs))
        except gr.Error as err:
            out = failed(err)
            return out if len(out) > 1 else out[0]

    return wrapped


def caller(request: Any) -> str:
    """Whose run a Stop stops: the browser tab's or API client's session. Gradio serves MCP without sessions and
    passes every MCP call on through one client of its own, so all MCP calls would share one key: each gets a key
    of its own instead, and an MCP client stops its run by the run's name (`optimise(run=...)`, `stop(run=...)`)."""
    headers = getattr(request, "headers", None) or {}
    if headers.get("x-gradio-user") == "mcp" or "/mcp" in str(getattr(request, "url", "") or ""):
        return f"mcp:{secrets.token_hex(8)}"
    return str(getattr(request, "session_hash", None) or f"api:{secrets.token_hex(8)}")


def delete_if_uploaded(blocks: Any) -> Callable[[str], None]:
    """A function that removes a file only if it came in through this server's upload route (Gradio's
    `upload_file_set`), with its folder: a caller who names a file the server made (a preview or an export handed to
    every visitor) gets it read, never deleted."""
    from sua_demo.ui.serving.upload_sweep import remove_upload

    def delete(path: str) -> None:
        if path in blocks.upload_file_set:
            remove_upload(blocks, path)

    return delete


def drop_page_state(blocks: Any, session_hash: str | None) -> None:
    """Forget what Gradio keeps of a closed tab: its components' values (a visitor's thumbnails among them), which
    Gradio would otherwise hold for an hour in case the tab reopens."""
    holder = getattr(blocks, "state_holder", None)
    if holder is None or not session_hash or session_hash not in holder:
        return
    holder.delete_state(session_hash)
    holder.session_data.pop(session_hash, None)
    holder.time_last_used.pop(session_hash, None)
