"""Device-to-device copies from 4 MiB to 4 GiB: the practical bandwidth ceiling the other memory-bound cases are read against.

`dst.copy_(src)` between two contiguous tensors of one dtype is a single memcpy: at 1 GiB it reads
1 GiB and writes 1 GiB (about 4250 GB/s, read + write, on an H200). The sweep shows where that
ceiling holds: the small copies pay the launch floor, and while source and destination together fit
in the 60 MB L2 the writes can stay on chip (the cold-cache flush empties it of the source before each
sample). Its scaling fit reads the launch floor and the cost per byte. Eager only: under CUDA-graph
replay the same copy became a different, ~1.5x slower implementation on the H200 (DESIGN §3).
"""

from __future__ import annotations

import torch

from perfguard import perf_case


def _random_bytes(nbytes, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randint(0, 256, (nbytes,), generator=gen, device=device, dtype=torch.uint8)


def _check(out, nbytes, device):
    assert torch.equal(out, _random_bytes(nbytes, device, seed=0)), "the copy differs from its source"


# On the H200 4 MiB to 4 GiB (1 GiB is 17x the L2); 16 MiB on a CPU, where 1 GiB would take ~100 ms per call.
@perf_case(
    params=lambda device: {"nbytes": [2**22, 2**24, 2**26, 2**28, 2**30, 2**32] if device == "cuda" else [2**24]},
    bytes=lambda nbytes: 2 * nbytes,  # read src once, write dst once
    check=_check,
)
def device_copy(nbytes, device):
    src = _random_bytes(nbytes, device, seed=0)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)
