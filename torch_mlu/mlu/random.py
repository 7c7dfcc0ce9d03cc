"""torch.mlu.random: the mlu generators' seeds and states, mirroring torch/cuda/random.py.

Each device has a default Philox generator (torch.mlu.default_generators).
A state is a CPU uint8 tensor of 16 bytes: the seed, then the offset (the
number of random ops drawn so far), as in CUDA.
"""
from collections.abc import Iterable
from typing import Union

import torch

from . import _lazy_call, _lazy_init, current_device, device_count
from ._utils import _get_device_index

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
]


def _generator(device: Union[int, str, torch.device] = "mlu") -> torch.Generator:
    index = _get_device_index(device, optional=True)
    return torch.mlu.default_generators[index]


def get_rng_state(device: Union[int, str, torch.device] = "mlu") -> torch.Tensor:
    r"""The random number generator state of ``device`` as a ByteTensor (default: the current device)."""
    _lazy_init()
    return _generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    r"""The states of all devices' generators."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state: torch.Tensor, device: Union[int, str, torch.device] = "mlu") -> None:
    r"""Sets the generator state of ``device`` (default: the current device)."""
    with torch._C._DisableFuncTorch():
        new_state_copy = new_state.clone(memory_format=torch.contiguous_format)
    index = _get_device_index(device, optional=True)

    def cb():
        torch.mlu.default_generators[index].set_state(new_state_copy)

    _lazy_call(cb)


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    r"""Sets the generator state of every device."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    r"""Seeds the generator of the current device."""
    seed = int(seed)

    def cb():
        torch.mlu.default_generators[current_device()].manual_seed(seed)

    _lazy_call(cb, seed=True)


def manual_seed_all(seed: int) -> None:
    r"""Seeds the generators of all devices."""
    seed = int(seed)

    def cb():
        for i in range(device_count()):
            torch.mlu.default_generators[i].manual_seed(seed)

    _lazy_call(cb, seed_all=True)


def seed() -> None:
    r"""Seeds the current device's generator with a random number."""

    def cb():
        torch.mlu.default_generators[current_device()].seed()

    _lazy_call(cb)


def seed_all() -> None:
    r"""Seeds every device's generator with one random number."""

    def cb():
        random_seed = None
        for i in range(device_count()):
            generator = torch.mlu.default_generators[i]
            if random_seed is None:
                generator.seed()
                random_seed = generator.initial_seed()
            else:
                generator.manual_seed(random_seed)

    _lazy_call(cb)


def initial_seed() -> int:
    r"""The current device's initial seed."""
    _lazy_init()
    return torch.mlu.default_generators[current_device()].initial_seed()
