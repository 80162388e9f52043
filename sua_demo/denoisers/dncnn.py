"""DnCNN (Zhang et al., 2017): a small residual CNN that predicts the noise and subtracts it.

Trained by this project on bench photos at the model's resolution with Gaussian noise,
sigma uniform in [0, 25/255] (`sua train-dncnn`); the weights ship in checkpoints/denoisers/.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from tqdm.auto import tqdm

from sua_demo.core.config import CHECKPOINTS
from sua_demo.core.errors import SuaError
from sua_demo.denoisers.base import DENOISERS, Denoiser

log = logging.getLogger(__name__)
DEFAULT_WEIGHTS = CHECKPOINTS / "denoisers" / "dncnn.safetensors"


def _net(depth: int, width: int) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(3, width, 3, padding=1), nn.ReLU(inplace=True)]
    for _ in range(depth - 2):
        layers += [nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
    layers.append(nn.Conv2d(width, 3, 3, padding=1))
    return nn.Sequential(*layers)


@DENOISERS.register("dncnn")
class DnCNN(Denoiser):
    def __init__(self, weights: str | Path | None = DEFAULT_WEIGHTS, depth: int = 6, width: int = 24) -> None:
        super().__init__()
        self.depth, self.width = depth, width
        self.net = _net(depth, width)
        if weights is not None:
            self.load(weights)
        self.eval()

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        return x - self.net(x)

    def load(self, path: str | Path) -> None:
        path = Path(path)
        if not path.is_file():
            raise SuaError(f"no DnCNN weights at {path}; build them with `sua train-dncnn`")
        self.net.load_state_dict(load_file(str(path)))

    def save(self, path: str | Path, meta: dict[str, object]) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().contiguous() for k, v in self.net.state_dict().items()}
        save_file(tensors, str(path), metadata={k: json.dumps(v) for k, v in meta.items()})


def train_dncnn(
    images: torch.Tensor,
    steps: int = 800,
    batch_size: int = 16,
    lr: float = 1e-3,
    max_sigma: float = 25 / 255,
    seed: int = 0,
    progress: bool = True,
) -> tuple[DnCNN, float]:
    """Fit on (N, 3, H, W) clean images; returns the model and its final mean squared error on the noise."""
    torch.manual_seed(seed)
    model = DnCNN(weights=None)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss = torch.tensor(0.0)
    for _ in tqdm(range(steps), desc="train DnCNN", disable=not progress):
        x = images[torch.randint(len(images), (batch_size,))]
        noise = torch.randn_like(x) * torch.rand(batch_size, 1, 1, 1) * max_sigma
        loss = ((model.net(x + noise) - noise) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model, float(loss.detach())
