"""Reading uploaded photos: every common format comes out as upright 8-bit RGB; hostile files get a clear error."""

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from sua_demo.core.errors import SuaError
from sua_demo.core.images import amplified, heatmap, read_image


def encode(im: Image.Image, fmt: str, **kwargs) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kwargs)
    return buf.getvalue()


def face(size=(40, 30)) -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def png_bytes(width: int, height: int, rows: bytes | None = None, bit_depth: int = 1) -> bytes:
    """A hand-built greyscale PNG, so header sizes that Pillow refuses to write can still be tested."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, 0, 0, 0, 0)
    if rows is None:
        rows = (b"\x00" + b"\x00" * ((width * bit_depth + 7) // 8)) * height
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "GIF", "BMP"])
def test_common_formats_read_as_rgb(fmt):
    im, _ = read_image(encode(face(), fmt))
    assert im.mode == "RGB" and im.size == (40, 30)


def test_exif_orientation_is_honoured():
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to view"
    im, _ = read_image(encode(face((40, 30)), "JPEG", exif=exif))
    assert im.size == (30, 40)


def test_first_frame_of_an_animated_gif_with_a_note():
    frames = [Image.new("RGB", (20, 20), c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)
    im, notes = read_image(buf.getvalue())
    r, g, b = im.getpixel((5, 5))
    assert r > 200 and g < 50 and b < 50
    assert any("first frame of 3" in n for n in notes)


def test_cmyk_palette_alpha_and_16_bit_become_rgb():
    cmyk, notes = read_image(encode(face().convert("CMYK"), "JPEG"))
    assert cmyk.mode == "RGB" and notes
    pal, _ = read_image(encode(face().convert("P"), "PNG"))
    assert pal.mode == "RGB"
    rgba = Image.new("RGBA", (20, 20), (255, 0, 0, 0))  # fully transparent red
    flat, notes = read_image(encode(rgba, "PNG"))
    assert flat.getpixel((3, 3)) == (255, 255, 255) and "transparency" in notes[0]
    deep = Image.fromarray(np.full((20, 20), 65535 // 2, dtype=np.uint16))
    grey, notes = read_image(encode(deep, "PNG"))
    assert abs(grey.getpixel((3, 3))[0] - 128) <= 1, "16-bit must be rescaled, not clipped to white"


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "empty"),
        (b"%PDF-1.4 not a picture at all", "not an image"),
        (png_bytes(1, 1), "at least 8x8"),
        (png_bytes(0, 0), "not an image"),  # PNG forbids a 0x0 header; Pillow cannot identify it
    ],
    ids=["empty", "pdf", "1x1", "0x0"],
)
def test_bad_files_are_refused_with_a_reason(data, message):
    with pytest.raises(SuaError, match=message):
        read_image(data)


def test_truncated_jpeg_is_refused():
    data = encode(face((200, 200)), "JPEG")
    with pytest.raises(SuaError, match="truncated"):
        read_image(data[: len(data) // 2])


def test_our_pixel_limit_applies_below_pillows_own():
    with pytest.raises(SuaError, match="64 megapixels"):
        read_image(png_bytes(8000, 8000))  # 64 MP: Pillow alone would decode it


def mutated(good: bytes, seed: int, span: int, flips: int) -> bytes:
    rng = np.random.default_rng(seed)
    data = bytearray(good)
    for i in rng.integers(0, min(span, len(data)), size=flips):
        data[i] = int(rng.integers(0, 256))
    return bytes(data)


def test_a_tiff_is_refused_before_its_decoder_runs():
    # TIFF is not an accepted format (issue 26): even one whose broken tag directory would make its decoder raise
    # TypeError("Missing dimensions") is refused by name, with the formats that are accepted.
    for data in (encode(face(), "TIFF"), mutated(encode(face(), "TIFF"), seed=28, span=200, flips=2)):
        with pytest.raises(SuaError, match="accepted format"):
            read_image(data)


def test_corrupt_files_never_escape_as_raw_errors():
    """Flip bytes all over real files: whatever the decoders raise, the user sees a SuaError (or a picture)."""
    for fmt in ("PNG", "JPEG", "GIF", "WEBP", "BMP"):
        good = encode(face(), fmt)
        for seed in range(40):
            try:
                im, _ = read_image(mutated(good, seed, len(good), 4))
                assert im.mode == "RGB"
            except SuaError:
                pass


def test_decompression_bomb_is_refused_before_decoding():
    bomb = png_bytes(30000, 30000)  # 900 megapixels of zeros, ~0.1 MB on disk
    assert len(bomb) < 2**20
    with pytest.raises(SuaError, match="megapixels"):
        read_image(bomb)


def test_missing_file(tmp_path):
    with pytest.raises(SuaError, match="no file"):
        read_image(tmp_path / "nope.png")


def test_views_of_delta_stay_in_range():
    import torch

    delta = (torch.rand(3, 8, 8) * 2 - 1) * 0.06
    view = amplified(delta, 0.06)
    assert view.min() >= 0 and view.max() <= 1 and abs(float(view.mean()) - 0.5) < 0.1
    hm = heatmap(delta.abs().amax(0), 0.06)
    assert hm.shape == (3, 8, 8) and hm.min() >= 0 and hm.max() <= 1


def test_a_wide_strip_is_refused_before_anything_is_decoded_or_resized(monkeypatch):
    """200000 x 8 is only 1.6 megapixels, but the processor would scale its short side up to the model's 64 px:
    a 1.6 M x 64 image. It is refused from the header, before a pixel is decoded."""
    decoded = []
    monkeypatch.setattr(Image.Image, "load", lambda self: decoded.append(1))
    with pytest.raises(SuaError, match="strip"):
        read_image(png_bytes(200000, 8))
    assert not decoded
