"""DiffPure-style purifier (Nie et al., ICML 2022) built with diffusers: diffuse the input to a small step t*,
then denoise it back with a small UNet2DModel trained by this project on bench photos.

DiffPure needs only the low-noise end of the chain (t* = 0.1 of it for CIFAR-10), so the UNet is trained on
t < T_TRAIN only, which a CPU can do in minutes (`sua train-ddpm`; weights ship in checkpoints/denoisers/ddpm,
fp16 safetensors). The reverse chain runs as a few deterministic DDIM steps rather than all t* DDPM steps; the
forward noise is seeded, so one image always purifies the same way. For the attack's gradient we use a
straight-through estimate (BPDA): the forward pass is the real purification, the backward pass the identity.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import torch
from tqdm.auto import tqdm

from sua_demo.core.augment import photo_jitter
from sua_demo.core.config import CHECKPOINTS
from sua_demo.core.errors import SuaError
from sua_demo.denoisers.base import DENOISERS, Denoiser, straight_through

log = logging.getLogger(__name__)
DEFAULT_WEIGHTS = CHECKPOINTS / "denoisers" / "ddpm"
TIMESTEPS = 1000  # the usual linear-beta DDPM schedule
T_TRAIN = 200  # trained on t < 200: purification starts at t* = 100
META = "sua_ddpm.json"


def small_unet(resolution: int):  # type: ignore[no-untyped-def]
    from diffusers import UNet2DModel

    return UNet2DModel(
        sample_size=resolution,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(32, 64),  # small t is local denoising: no attention, two scales are enough on a CPU
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
    )


def _scheduler():  # type: ignore[no-untyped-def]
    from diffusers import DDPMScheduler

    return DDPMScheduler(num_train_timesteps=TIMESTEPS)


@DENOISERS.register("ddpm")
class DDPMPurifier(Denoiser):
    def __init__(
        self,
        weights: str | Path | None = DEFAULT_WEIGHTS,
        t_star: int = 100,
        reverse_steps: int = 10,
        seed: int = 0,
        unet=None,  # type: ignore[no-untyped-def]
    ) -> None:
        super().__init__()
        from diffusers import UNet2DModel

        if unet is None:
            if weights is None or not (Path(weights) / "config.json").exists():
                raise SuaError(f"no DDPM weights at {weights}; train them with `sua train-ddpm`")
            try:  # safetensors only: a pickled diffusion_pytorch_model.bin is never unpickled
                unet = UNet2DModel.from_pretrained(weights, use_safetensors=True).float()
            except (OSError, ValueError, RuntimeError) as err:
                log.info("loading DDPM weights from %s failed: %s", weights, err)
                raise SuaError(
                    f"the DDPM weights in {Path(weights).name} are missing, pickled or corrupt (only safetensors "
                    "files are loaded); train them again with `sua train-ddpm`"
                ) from None
        if not 0 < t_star < T_TRAIN:
            raise SuaError(f"t_star must be in 1..{T_TRAIN - 1} (the range the UNet was trained on), got {t_star}")
        self.unet = unet.eval().requires_grad_(False)
        self.scheduler = _scheduler()
        self.t_star, self.reverse_steps, self.seed = t_star, reverse_steps, seed

    @torch.no_grad()
    def purify(self, x: torch.Tensor) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed)
        noise = torch.randn(x.shape, generator=gen).to(x.device, x.dtype)
        t = torch.full((x.shape[0],), self.t_star, dtype=torch.long, device=x.device)
        sample = self.scheduler.add_noise(x * 2 - 1, noise, t)
        alphas = self.scheduler.alphas_cumprod.to(x.device)
        stride = max(1, self.t_star // self.reverse_steps)
        for step in range(self.t_star, 0, -stride):
            prev = max(step - stride, 0)
            eps = self.unet(sample, step).sample
            a_t, a_prev = alphas[step], alphas[prev] if prev > 0 else alphas.new_tensor(1.0)
            x0 = (sample - (1 - a_t).sqrt() * eps) / a_t.sqrt()
            sample = a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps  # DDIM, eta = 0
        return ((sample + 1) / 2).clamp(0, 1)

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        return straight_through(x, self.purify(x.detach()))


def train_ddpm(
    images: torch.Tensor,
    steps: int,
    batch_size: int = 8,  # small batches, many steps: ~0.3 s a step on 2 cores, so 3000 steps fit in 20 minutes
    lr: float = 1e-3,
    seed: int = 0,
    t_max: int = T_TRAIN,
    progress: bool = True,
):  # type: ignore[no-untyped-def]
    """Epsilon-prediction on (N, 3, S, S) images in [0, 1] at t < t_max, with photo jitter; (unet, last loss)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    unet = small_unet(images.shape[-1])
    sched = _scheduler()
    opt = torch.optim.AdamW(unet.parameters(), lr=lr, weight_decay=0.0)
    losses: list[float] = []
    for i in tqdm(range(steps), desc="train DDPM", disable=not progress):
        for group in opt.param_groups:  # a short warm-up, then cosine decay
            group["lr"] = lr * min(1.0, (i + 1) / 50) * 0.5 * (1 + math.cos(math.pi * i / max(steps, 1)))
        x0 = photo_jitter(images[torch.randint(len(images), (batch_size,), generator=gen)], gen) * 2 - 1
        noise = torch.randn(x0.shape, generator=gen)
        t = torch.randint(0, t_max, (batch_size,), generator=gen)
        loss = torch.nn.functional.mse_loss(unet(sched.add_noise(x0, noise, t), t).sample, noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return unet.eval(), sum(losses[-50:]) / max(1, len(losses[-50:]))


def save_ddpm(unet, folder: str | Path, meta: dict[str, object]) -> Path:  # type: ignore[no-untyped-def]
    """fp16 safetensors (diffusers' own folder layout, loadable with UNet2DModel.from_pretrained) + training facts."""
    folder = Path(folder)
    unet.to(torch.float16).save_pretrained(folder, safe_serialization=True)
    unet.to(torch.float32)
    (folder / META).write_text(json.dumps(meta, indent=2) + "\n")
    return folder
