"""The README's first example: a perf case, as a kernel author writes one.

benchmarks/readme_example.sh runs it the way the README's loop does (record, gate, a regression) and
prints the output the README shows. PERFGUARD_EXAMPLE_CLONE=1 stands for the change that regresses it.
"""

import os

import torch

from perfguard import perf_case

CLONE = os.environ.get("PERFGUARD_EXAMPLE_CLONE") == "1"


@perf_case(
    params={"n": [2**24, 2**26], "dtype": [torch.float16, torch.float32]},
    bytes=lambda n, dtype: 3 * n * dtype.itemsize,  # fewest bytes the op must move: read a, b; write a + b
    flops=lambda n: n,
)
def vector_add(n, dtype, device):
    a = torch.randn(n, device=device, dtype=dtype)
    b = torch.randn_like(a)
    if CLONE:  # the regression: an extra copy of the result
        return lambda: (a + b).clone()
    return lambda: a + b
