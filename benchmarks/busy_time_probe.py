"""Does one kernel's GPU busy time (the counting pass's) jump between fresh processes, and is it the
GPU's clock? One layer_norm (32768 x 4096 bf16, 256 MiB), three trials a process: the pass after 0.3 s
idle ("cold", as between cases), the pass after 50 ms of back-to-back calls ("warm"), and the CUDA-event
time of 200 calls; the SM clock (NVML) as each pass starts. Run it in several fresh processes:

    for i in 1 2 3 4 5 6 7 8; do python3 benchmarks/busy_time_probe.py $i; done

Busy time's prior (perfguard/analysis/priors.py) rests on what this shows across processes.
"""

import statistics
import sys
import time

import pynvml
import torch
import torch.nn.functional as F

from perfguard.measure import counters

ROW = 4096


def main(label: str) -> None:
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    x = torch.randn(32768, ROW, device="cuda", dtype=torch.bfloat16)
    w, b = torch.ones(ROW, device="cuda", dtype=x.dtype), torch.zeros(ROW, device="cuda", dtype=x.dtype)

    def fn():
        return F.layer_norm(x, (ROW,), w, b)

    def event_us(n: int = 200) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        torch.cuda.synchronize()
        return 1e3 * start.elapsed_time(end) / n

    def spin(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            fn()
        torch.cuda.synchronize()

    counters.prepare()
    for _ in range(3):
        time.sleep(0.3)
        cold_mhz = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        _, cold = counters.count(fn, True)
        spin(0.05)
        warm_mhz = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        _, warm = counters.count(fn, True)
        print(f"proc {label} cold {1e3 * statistics.median(cold):.1f} us  warm {1e3 * statistics.median(warm):.1f} us  "
              f"event {event_us():.1f} us  sm MHz {cold_mhz}/{warm_mhz}  cold calls {[round(1e3 * v, 1) for v in cold]}",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "1")
