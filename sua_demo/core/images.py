"""Reading photos people upload: a common format in, one RGB picture out, or a one-line reason why not.

The app and the CLI accept whatever a phone or a browser produces (JPEG with EXIF rotation, PNG with
alpha, 16-bit PNG, palette GIF, WebP, CMYK JPEG...). Everything odd is normalised here, so the models
only ever see 8-bit RGB; everything hostile (not an image, truncated, a decompression bomb, 1x1) is
refused here with a message a person can act on.
"""

from __future__ import annotations

import io
import logging
import struct
import warnings
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError

from sua_demo.core.errors import SuaError

log = logging.getLogger(__name__)
# The formats a phone, a camera or a browser produces. Only their decoders ever see an upload, so a file that
# claims to be EPS (which would start Ghostscript), TIFF, PSD or any rarer format never reaches its plugin.
FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP")
ACCEPTED = "JPEG, PNG, WebP, GIF or BMP"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Ancillary PNG chunks that hold text, a colour profile or EXIF: none is needed to show the pixels, and each can
# be large enough (compressed text past the decoder's caps) to stop a valid picture from decoding.
PNG_METADATA = (b"tEXt", b"zTXt", b"iTXt", b"iCCP", b"eXIf")
MAX_PIXELS = 50_000_000  # ~7000 x 7000: far beyond any photo the models need, far below a bomb
MAX_ASPECT = 10  # the processor scales the short side up to the model's size: a 200000x8 strip would become
# 1.6 M x 64 px (a gigabyte) however few pixels it has, so the cap on pixels must hold after that resize too
MIN_SIDE = 8
MAX_BYTES = 50 * 2**20


def read_image(source: str | Path | bytes) -> tuple[Image.Image, list[str]]:
    """An 8-bit RGB picture, upright, plus notes on what was changed (e.g. "first frame of 12")."""
    if isinstance(source, bytes):
        data = source
        if len(data) > MAX_BYTES:
            raise SuaError(f"the image is larger than {MAX_BYTES // 2**20} MB; upload a smaller photo")
    else:
        path = Path(source)
        if not path.is_file():
            raise SuaError(f"no file at {path}")
        if path.stat().st_size > MAX_BYTES:
            raise SuaError(f"{path.name} is larger than {MAX_BYTES // 2**20} MB; upload a smaller photo")
        data = path.read_bytes()
    if not data:
        raise SuaError("the file is empty")
    try:
        rgb, notes = _decode(data)
    except SuaError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise SuaError("image is too large to decode safely; upload a photo under 50 megapixels") from err
    except UnidentifiedImageError as err:
        raise SuaError(f"not an image in an accepted format; upload a {ACCEPTED} photo") from err
    except Exception as err:  # a corrupt file can make a decoder fail in any way; none may reach the user raw
        rgb, notes = _without_metadata(data, err)
    return rgb, notes


def _decode(data: bytes) -> tuple[Image.Image, list[str]]:
    """Decode `data` (one of FORMATS) to 8-bit RGB with notes; the decoder's own exceptions pass through."""
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        im = Image.open(io.BytesIO(data), formats=list(FORMATS))
        _check_size(im.size)  # from the header, before decoding a single pixel
        frames = getattr(im, "n_frames", 1)
        if frames > 1:
            im.seek(0)
            notes.append(f"animated image: using its first frame of {frames}")
        im.load()
        im = ImageOps.exif_transpose(im) or im
        rgb, note = to_rgb(im)
    if note:
        notes.append(note)
    return rgb, notes


def _without_metadata(data: bytes, err: Exception) -> tuple[Image.Image, list[str]]:
    """A PNG that failed to decode, tried once more with its text, colour profile and EXIF chunks dropped (text
    beyond the decoder's size caps is enough to fail a valid picture); anything else is refused as corrupt."""
    stripped = strip_png_metadata(data) if data.startswith(PNG_SIGNATURE) else data
    if stripped != data:
        try:
            rgb, notes = _decode(stripped)
            return rgb, [*notes, "image metadata dropped"]
        except SuaError:
            raise
        except Exception as again:  # still corrupt without them: the refusal below
            err = again
    log.debug("image decoding failed: %s: %s", type(err).__name__, err)  # the decoder's words, for debugging
    raise SuaError("the image could not be decoded: the file may be truncated or corrupt, so upload another copy")


def strip_png_metadata(data: bytes) -> bytes:
    """The PNG without its PNG_METADATA chunks; the rest is copied byte for byte. A chunk whose length runs
    past the end stops the walk there, and the remainder is kept as it is for the decoder to judge."""
    out = [data[:8]]
    pos = 8
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length  # length, type, data, CRC
        if end > len(data):
            break
        if kind not in PNG_METADATA:
            out.append(data[pos:end])
        pos = end
    out.append(data[pos:])
    return b"".join(out)


def _check_size(size: tuple[int, int]) -> None:
    w, h = size
    if w < MIN_SIDE or h < MIN_SIDE:
        raise SuaError(f"image is {w}x{h} pixels; it needs at least {MIN_SIDE}x{MIN_SIDE} to show a face")
    if w * h > MAX_PIXELS:
        raise SuaError(f"image is {w}x{h} = {w * h / 1e6:.0f} megapixels; upload a photo under 50 megapixels")
    if max(w, h) > MAX_ASPECT * min(w, h):
        raise SuaError(f"image is {w}x{h} pixels, a strip rather than a photo; upload one under {MAX_ASPECT}:1")


def to_rgb(im: Image.Image) -> tuple[Image.Image, str]:
    """8-bit RGB. Transparency is flattened onto white; 16-bit and float images are rescaled, not clipped."""
    mode = im.mode
    if mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.nan_to_num(np.asarray(im, dtype=np.float64))
        top = 65535.0 if mode.startswith("I;16") or arr.max() > 255 else 255.0
        if mode == "F":
            top = max(float(arr.max()), 1e-12) if arr.max() > 1 else 1.0
        grey = np.clip(arr / top * 255 + 0.5, 0, 255).astype(np.uint8)
        return Image.fromarray(grey).convert("RGB"), f"{mode} image rescaled to 8 bits"
    if (mode == "P" and "transparency" in im.info) or mode in ("RGBA", "LA", "PA", "La", "RGBa"):
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB"), "transparency flattened onto white"
    if mode == "RGB":
        return im, ""
    return im.convert("RGB"), f"{mode} image converted to RGB"


def to_pil(x: torch.Tensor, scale: int = 1) -> Image.Image:
    """(3, H, W) in [0, 1] -> PIL, optionally upscaled with hard pixel edges (what the model sees, bigger)."""
    arr = (x.detach().float().clamp(0, 1).permute(1, 2, 0).cpu().numpy() * 255 + 0.5).astype(np.uint8)
    im = Image.fromarray(arr)
    return im.resize((im.width * scale, im.height * scale), Image.NEAREST) if scale > 1 else im


def amplified(delta: torch.Tensor, eps: float) -> torch.Tensor:
    """delta mapped from [-eps, eps] onto [0, 1], so an invisible pattern becomes visible."""
    return (delta / (2 * max(eps, 1e-12)) + 0.5).clamp(0, 1)


def heatmap(diff: torch.Tensor, top: float) -> torch.Tensor:
    """(H, W) magnitudes -> (3, H, W) black-red-yellow-white colours, `top` mapping to white."""
    t = (diff / max(top, 1e-12)).clamp(0, 1)
    r = (3 * t).clamp(0, 1)
    g = (3 * t - 1).clamp(0, 1)
    b = (3 * t - 2).clamp(0, 1)
    return torch.stack([r, g, b])
