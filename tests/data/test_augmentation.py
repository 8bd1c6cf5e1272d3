"""DrQ random shift: shapes, dtype, bounded shifts with edge replication, independent obs/next_obs draws."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from robot_rl.data.augmentation import augment_batch, random_shift
from robot_rl.data.batch import Batch


def reference_shift(image: torch.Tensor, dy: int, dx: int, pad: int) -> torch.Tensor:
    """Replicate-pad by ``pad`` then crop at offset (pad + dy, pad + dx): [H, W, C] -> [H, W, C]."""
    h, w, _ = image.shape
    padded = F.pad(image.permute(2, 0, 1)[None].float(), (pad, pad, pad, pad), mode="replicate")[0]
    crop = padded[:, pad + dy : pad + dy + h, pad + dx : pad + dx + w]
    return crop.permute(1, 2, 0).to(image.dtype)


def find_shift(src: torch.Tensor, out: torch.Tensor, pad: int) -> tuple[int, int] | None:
    for dy in range(-pad, pad + 1):
        for dx in range(-pad, pad + 1):
            if torch.equal(reference_shift(src, dy, dx, pad), out):
                return dy, dx
    return None


def test_keeps_shape_and_dtype() -> None:
    images = torch.randint(0, 256, (5, 64, 48, 3), dtype=torch.uint8)
    out = random_shift(images, 4, torch.Generator().manual_seed(0))
    assert out.shape == images.shape and out.dtype == torch.uint8
    floats = torch.rand(2, 16, 16, 3)
    assert random_shift(floats, 4).dtype == torch.float32


def test_each_image_is_a_replicate_padded_crop_within_pad_pixels() -> None:
    gen = torch.Generator().manual_seed(1)
    images = torch.randint(0, 256, (16, 20, 24, 3), generator=gen, dtype=torch.uint8)
    out = random_shift(images, 4, gen)
    shifts = [find_shift(images[i], out[i], 4) for i in range(16)]
    assert all(s is not None for s in shifts)  # every output is some shift in [-4, 4]^2
    assert len(set(shifts)) > 4  # drawn per image, not once per batch


def test_pad_zero_is_identity() -> None:
    images = torch.randint(0, 256, (3, 8, 8, 3), dtype=torch.uint8)
    assert torch.equal(random_shift(images, 0), images)


def test_obs_and_next_obs_get_independent_shifts() -> None:
    gen = torch.Generator().manual_seed(2)
    images = torch.randint(0, 256, (32, 32, 32, 3), generator=gen, dtype=torch.uint8)
    batch = Batch(
        obs={"images/front": images, "state": torch.zeros(32, 3)},
        action=torch.zeros(32, 7),
        reward=torch.zeros(32),
        discount=torch.ones(32),
        next_obs={"images/front": images.clone(), "state": torch.zeros(32, 3)},
    )
    out = augment_batch(batch, 4, gen)
    assert not torch.equal(out.obs["images/front"], out.next_obs["images/front"])
    assert out.obs["state"] is batch.obs["state"]  # non-image keys untouched
    assert torch.equal(batch.obs["images/front"], images)  # the input batch is not modified


def test_seeded_generator_reproduces_the_shift() -> None:
    images = torch.randint(0, 256, (4, 16, 16, 3), dtype=torch.uint8)
    a = random_shift(images, 4, torch.Generator().manual_seed(3))
    b = random_shift(images, 4, torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
