"""The app served on localhost and driven through its public API with gradio_client, as a remote user would,
including every bad input a load test of the running app found: each gets a clear message, and the server
still answers afterwards."""

import json
import urllib.request

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

pytestmark = pytest.mark.slow  # the served app: `make test-fast` leaves it out


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


def predict(client, **kw):
    args = {
        "model": "idk",
        "person": "5",
        "photo": 5,
        "upload": None,
        "question": "",
        "noise_source": "shipped",
        "noise_file": None,
        "denoiser": "gaussian",
        **kw,
    }
    return client.predict(**args, api_name="/answer")


def raw_call(app_url: str, api: str, data_json: str) -> str:
    """POST a JSON body as written (NaN included, which gradio_client cannot send) and read the event stream."""
    req = urllib.request.Request(
        f"{app_url}gradio_api/call/{api}", data=data_json.encode(), headers={"Content-Type": "application/json"}
    )
    event = json.loads(urllib.request.urlopen(req, timeout=60).read())["event_id"]
    return urllib.request.urlopen(f"{app_url}gradio_api/call/{api}/{event}", timeout=120).read().decode()


def questions(words: str) -> int:
    """How many questions an answer's words report (one "Q:" line each)."""
    return sum(line.startswith("Q: ") for line in words.splitlines())


def still_up(client) -> None:
    words, _ = predict(client)
    assert questions(words) == 5


def test_the_api_lists_the_endpoints(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/load_model", "/answer", "/verdict", "/embedding_map", "/optimise", "/stop", "/batch"} <= set(endpoints)


def test_predict_with_a_bench_person_and_an_upload(client, tmp_path):
    words, data = predict(client)
    assert words.startswith("#5 ") and "model idk" in words and json.loads(data)["model"] == "idk"
    from sua_demo.dataset import build_bench

    path = tmp_path / "someone.webp"
    build_bench().person(14).photos[6].resize((300, 300)).save(path)
    words, data = predict(client, upload=handle_file(str(path)), question="Where was I born?")
    assert questions(words) == 6 and words.startswith("your photo") and "fictitious" in words
    assert len(json.loads(data)["rows"]) == 6


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"person": "9" * 5000}, "pick a person"),
        ({"model": "m" * 5000}, "too long"),
        ({"denoiser": "wavelet"}, "wavelet.*(list of choices|choose one of)"),
        ({"noise_source": "uploaded"}, "upload a .safetensors"),
    ],
)
def test_bad_numbers_and_names_are_refused_with_a_message(client, kw, message):
    with pytest.raises(AppError, match=message):
        predict(client, **kw)
    still_up(client)


@pytest.mark.parametrize(
    "api, data, message",
    [
        ("answer", '["idk", "5", NaN, null, "", "shipped", null, "gaussian", "", ""]', "photo must be"),
        ("optimise", '["idk", 16, NaN, "gaussian", 100, ""]', "steps must be"),
        ("optimise", '["idk", 16, 5, "gaussian", NaN, ""]', "stealth weight must be"),
    ],
)
def test_nan_through_the_raw_api_is_refused_with_a_message(app_url, client, api, data, message):
    out = raw_call(app_url, api, '{"data": ' + data + "}")
    assert "event: error" in out and message in out and "convert float NaN" not in out
    still_up(client)


def test_bad_files_are_refused_and_nothing_is_echoed(client, tmp_path):
    from tests.core.test_images import png_bytes

    cases = {
        "holiday.jpg": (b"GIF89a but really just some bytes", "not an image"),
        "strip.png": (png_bytes(200000, 8), "strip"),  # 4.8 KB that the processor would scale to a gigabyte
        "bomb.png": (png_bytes(30000, 30000), "megapixels"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(AppError, match=message) as err:
            predict(client, upload=handle_file(str(tmp_path / name)))
        assert "PIL" not in str(err.value) and "pixels, could be decompression bomb" not in str(err.value)
    still_up(client)


@pytest.mark.parametrize(
    "meta, message",
    [({"attacker_ids": '"abc"'}, "attacker_ids"), ({"attacker_ids": "5"}, "attacker_ids"),
     ({"attacker_ids": "[1, 2]", "split_seed": '"x"'}, "split_seed"), ({}, None)],
)  # fmt: skip
def test_uploaded_noise_metadata_is_validated(client, tmp_path, meta, message):
    import torch
    from safetensors.torch import save_file

    path = tmp_path / "noise.safetensors"
    save_file({"delta": torch.zeros(3, *served_size())}, str(path), metadata={"eps": str(16 / 255), **meta})
    if message is None:
        words, _ = predict(client, noise_source="uploaded", noise_file=handle_file(str(path)))
        assert questions(words) == 5
        return
    with pytest.raises(AppError, match=message):
        predict(client, noise_source="uploaded", noise_file=handle_file(str(path)))
    still_up(client)


def test_stop_is_an_endpoint(client):
    assert client.predict(api_name="/stop") == "nothing is running to stop"  # nothing runs: changes nothing
    assert client.predict("someone-elses", api_name="/stop") == "no run of yours with that id is running"
    still_up(client)


def test_oversized_uploads_are_refused_by_the_server(app_url, tmp_path):
    """max_file_size: a 30 MB upload is turned away before it is kept."""
    big = tmp_path / "big.png"
    big.write_bytes(b"\0" * (30 * 2**20))
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="(?i)size|large|413"):
        predict(client, upload=handle_file(str(big)))
    still_up(client)


def test_the_page_has_a_description_for_link_previews(app_url):
    """Gradio adds `head` to the page on load; on a Space the README's short_description serves crawlers."""
    config = json.loads(urllib.request.urlopen(app_url + "config", timeout=30).read())
    assert config.get("title", "").startswith("SUA Lab")
    assert 'name="description"' in config.get("head", "") and "og:title" in config["head"]


def test_the_handlers_are_mcp_tools(app_url):
    """launch(mcp_server=True): the typed, documented handlers are listed as MCP tools."""
    pytest.importorskip("mcp")
    schema = json.loads(urllib.request.urlopen(app_url + "gradio_api/mcp/schema", timeout=30).read())
    names = {t["name"] for t in schema} if isinstance(schema, list) else set(schema)
    assert any("answer" in n for n in names) and any("verdict" in n for n in names), names


def served_size() -> tuple[int, int]:
    """The served world's photo size (the app serves in this process): a noise must match it to be read at all."""
    from sua_demo.ui.shared import state

    size = state().engine.session("idk").image_size
    return size, size


def _served_noise(tmp_path, meta):
    import torch
    from safetensors.torch import save_file

    path = tmp_path / "hostile.safetensors"
    save_file({"delta": torch.zeros(3, *served_size())}, str(path), metadata={"eps": str(16 / 255), **meta})
    return path


@pytest.mark.parametrize(
    "meta, message",
    [
        ({"config": "[" * 100_000 + "]" * 100_000}, "too long, too deeply nested"),
        ({"step": "9" * 4500}, "too many digits"),
        ({"eps": "1" * 5000}, "too many digits"),
        ({"eps": "true"}, "non-numeric 'eps'"),
    ],
    ids=["100k-deep", "4500-digit-step", "5000-digit-eps", "eps-true"],
)
def test_hostile_noise_metadata_through_the_api_is_one_line(client, tmp_path, meta, message):
    with pytest.raises(AppError, match=message) as err:
        predict(client, noise_source="uploaded", noise_file=handle_file(str(_served_noise(tmp_path, meta))))
    text = str(err.value)
    assert "\n" not in text.strip() and "Recursion" not in text and "int_max_str_digits" not in text, text
    still_up(client)


@pytest.mark.parametrize("kind", ["iTXt", "iCCP", "eps"])
def test_hostile_images_through_the_api(client, tmp_path, kind):
    """A PNG whose metadata is over the decoder's caps is read without it; formats beyond the five are refused."""
    from tests.ui.test_hostile import BIG, _chunk, _png

    data = {
        "iTXt": _png(_chunk(b"iTXt", b"comment\0\1\0\0\0" + BIG)),
        "iCCP": _png(_chunk(b"iCCP", b"profile\0\0" + BIG)),
        "eps": b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 16 16\n%%EndComments\nshowpage\n",
    }[kind]
    path = tmp_path / ("photo.eps" if kind == "eps" else "photo.png")
    path.write_bytes(data)
    if kind == "eps":
        with pytest.raises(AppError, match="JPEG, PNG, WebP, GIF or BMP") as err:
            predict(client, upload=handle_file(str(path)))
        assert "Pillow" not in str(err.value) and "Ghostscript" not in str(err.value)
    else:
        words, _ = predict(client, upload=handle_file(str(path)))
        assert questions(words) == 5 and "metadata dropped" in words
    still_up(client)


def test_a_model_folder_with_only_pickled_weights_is_refused_through_the_api(client, tmp_path):
    from tests.ui.test_hostile import _pickled_model

    folder = _pickled_model(tmp_path / "pickled")
    with pytest.raises(AppError, match="holds no .safetensors weights") as err:
        client.predict(model=str(folder), person="", role_filter="all", api_name="/load_model")
    assert "\n" not in str(err.value).strip()
    still_up(client)
