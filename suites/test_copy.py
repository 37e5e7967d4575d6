"""A 1 GiB device-to-device copy: the practical bandwidth ceiling the other memory-bound cases are read against.

`dst.copy_(src)` between two contiguous tensors of one dtype is a single memcpy: it reads 1 GiB and
writes 1 GiB (about 4250 GB/s, read + write, on an H200). Eager only: under CUDA-graph replay the
same copy became a different, ~1.5x slower implementation on the H200 (DESIGN §3).
"""

from __future__ import annotations

import torch

from perfguard import perf_case


def _random_bytes(nbytes, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randint(0, 256, (nbytes,), generator=gen, device=device, dtype=torch.uint8)


def _check(out, nbytes, device):
    assert torch.equal(out, _random_bytes(nbytes, device, seed=0)), "the copy differs from its source"


# 1 GiB on the H200 (17x the L2); 16 MiB on a CPU, where 1 GiB would take ~100 ms per call.
@perf_case(
    params=lambda device: {"nbytes": [2**30] if device == "cuda" else [2**24]},
    bytes=lambda nbytes: 2 * nbytes,  # read src once, write dst once
    check=_check,
)
def device_copy(nbytes, device):
    src = _random_bytes(nbytes, device, seed=0)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)
