"""DiffPure-style purifier (Nie et al., 2022) built with diffusers: noise the input up to step t*, then run the
reverse DDPM chain back to 0 with a small UNet2DModel trained on bench photos.

The reverse chain is long and stochastic; for the attack's gradient we use a straight-through estimate
(BPDA), so delta still gets a gradient while the forward pass is the real purification.
Training a useful UNet takes far longer than a CPU session allows; `train_ddpm` is the code path and
the tests run a few steps of it. Without trained weights, `build_denoiser("ddpm")` says so.
"""

from __future__ import annotations

from pathlib import Path

import torch

from sua_demo.config import CHECKPOINTS
from sua_demo.denoisers.base import DENOISERS, Denoiser, straight_through
from sua_demo.errors import SuaError

DEFAULT_WEIGHTS = CHECKPOINTS / "denoisers" / "ddpm"


def small_unet(resolution: int):  # type: ignore[no-untyped-def]
    from diffusers import UNet2DModel

    return UNet2DModel(
        sample_size=resolution,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
    )


@DENOISERS.register("ddpm")
class DDPMPurifier(Denoiser):
    def __init__(
        self, weights: str | Path | None = DEFAULT_WEIGHTS, t_star: int = 100, seed: int = 0, unet=None, scheduler=None
    ) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        from diffusers import DDPMScheduler, UNet2DModel

        if unet is None:
            if weights is None or not (Path(weights) / "config.json").exists():
                raise SuaError(f"no DDPM weights at {weights}; train them with sua_demo.denoisers.ddpm.train_ddpm")
            unet = UNet2DModel.from_pretrained(weights)
        self.unet = unet.eval()
        self.scheduler = scheduler or DDPMScheduler(num_train_timesteps=1000)
        self.t_star = t_star
        self.seed = seed

    @torch.no_grad()
    def purify(self, x: torch.Tensor) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed)
        sample = x * 2 - 1
        t = torch.full((x.shape[0],), self.t_star, dtype=torch.long)
        sample = self.scheduler.add_noise(sample, torch.randn(sample.shape, generator=gen), t)
        for step in range(self.t_star, -1, -1):
            eps = self.unet(sample, step).sample
            sample = self.scheduler.step(eps, step, sample, generator=gen).prev_sample
        return ((sample + 1) / 2).clamp(0, 1)

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        return straight_through(x, self.purify(x.detach()))


def train_ddpm(images: torch.Tensor, steps: int, batch_size: int = 16, lr: float = 2e-4, seed: int = 0):  # type: ignore[no-untyped-def]
    """Standard epsilon-prediction training on (N, 3, S, S) images in [0, 1]; returns (unet, scheduler, last loss)."""
    from diffusers import DDPMScheduler

    torch.manual_seed(seed)
    unet = small_unet(images.shape[-1])
    scheduler = DDPMScheduler(num_train_timesteps=1000)
    opt = torch.optim.AdamW(unet.parameters(), lr=lr)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        x0 = images[torch.randint(len(images), (batch_size,))] * 2 - 1
        noise = torch.randn_like(x0)
        t = torch.randint(0, scheduler.config.num_train_timesteps, (batch_size,))
        loss = torch.nn.functional.mse_loss(unet(scheduler.add_noise(x0, noise, t), t).sample, noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return unet.eval(), scheduler, float(loss.detach())
