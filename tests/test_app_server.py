"""The app served on localhost and driven through its public API with gradio_client, as a remote user would."""

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


def predict(client, **kw):
    args = {
        "model": "idk",
        "custom": "",
        "person": "5",  # a forget person the shipped IDK noise never saw
        "photo": 5,
        "upload": None,
        "question": "",
        "noise_source": "shipped",
        "noise_file": None,
        "denoiser": "gaussian",
        **kw,
    }
    return client.predict(**args, api_name="/answer")


def test_the_api_lists_the_endpoints(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert {"/load_model", "/answer", "/embedding_map", "/optimise", "/batch"} <= set(endpoints)


def test_predict_with_a_bench_person(client):
    images, table, metrics, note = predict(client)
    rows = table["data"]
    assert len(images) == 5 and len(rows) == 5
    assert any("✓" in r[3] for r in rows), f"the shipped noise brings back no true answer about #5: {rows}"
    assert "unseen by δ" in note


def test_predict_with_an_upload(client, tmp_path):
    from sua_demo.bench import build_bench

    path = tmp_path / "someone.webp"
    build_bench().person(14).photos[6].resize((300, 300)).save(path)
    _, table, _, note = predict(client, upload=handle_file(str(path)), question="Where was this person born?")
    assert len(table["data"]) == 6 and "your photo" in note


def test_a_bad_file_gives_a_clear_error_and_the_server_stays_up(client, tmp_path):
    bad = tmp_path / "holiday.jpg"
    bad.write_bytes(b"GIF89a but really just some bytes")
    with pytest.raises(AppError, match="not an image"):
        predict(client, upload=handle_file(str(bad)))
    nan_noise = tmp_path / "noise.safetensors"
    nan_noise.write_bytes(b"not a safetensors file")
    with pytest.raises(AppError, match="safetensors"):
        predict(client, noise_source="uploaded", noise_file=handle_file(str(nan_noise)))
    _, table, _, _ = predict(client)  # still serving
    assert len(table["data"]) == 5
