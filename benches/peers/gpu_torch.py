"""PyTorch on the GPU machine, the peer of `benches/cuda.rs`: the same operations at the
same sizes on data already on the device, timed with CUDA events (median of 20 rounds of
10 launches after a warm-up), TF32 off so that the matrix product is plain f32 as ours is.
Staged and run by scripts/gpu-check.sh's run.sh; prints one `torch summary:` line each.

Run: python3 benches/peers/gpu_torch.py   (needs torch with CUDA)
"""
import statistics
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")


def median_us(fn, rounds=20, launches=10):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(launches):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / launches)
    return statistics.median(times)


def line(name, us, extra=""):
    print(f"torch summary: {name}: {us:.1f} µs{extra}", flush=True)


print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}", flush=True)
n = 4096
a, b = torch.rand(n, n, device=dev) - 0.5, torch.rand(n, n, device=dev) - 0.5
c = torch.empty(n, n, device=dev)
us = median_us(lambda: torch.matmul(a, b, out=c))
line("sgemm 4096³ f32 (cuBLAS through torch, no TF32)", us, f" ({2 * n**3 / us / 1e3:.0f} GFLOP/s)")
del a, b, c

rows, cols = 16384, 4096
x = torch.rand(rows, cols, device=dev) - 0.5
y = torch.empty_like(x)
gamma, beta = torch.rand(cols, device=dev), torch.rand(cols, device=dev)
mib = 4.0 * rows * cols
us_copy = median_us(lambda: y.copy_(x))
line("device copy of 256 MiB", us_copy, f" ({2 * mib / us_copy / 1e3:.0f} GB/s)")


def rate(name, fn, traffic):
    us = median_us(fn)
    floor = us_copy * traffic / (2 * mib)
    line(name, us, f" ({traffic / us / 1e3:.0f} GB/s of least traffic; fraction of the copy rate {floor / us:.3f})")


rate("softmax 16384x4096", lambda: torch.softmax(x, dim=1), 2 * mib)
rate("layernorm 16384x4096", lambda: torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5), 2 * mib)


def stats():
    m = x.amax(dim=1)
    return m, torch.exp(x - m[:, None]).sum(dim=1)


rate("softmax statistics (amax, then exp-sum) 16384x4096", stats, mib)
rate("logsumexp 16384x4096 (one fused reduction)", lambda: torch.logsumexp(x, dim=1), mib)
rate("argmax 16384x4096 (max with index)", lambda: torch.max(x, dim=1), mib)
rate("row cumsum 16384x4096", lambda: torch.cumsum(x, dim=1, out=y), 2 * mib)
x1, y1 = x.reshape(-1), y.reshape(-1)
rate("prefix sum 2^26", lambda: torch.cumsum(x1, dim=0, out=y1), 2 * mib)
v = (1 << 26)
va, vb, vc = x1[:v], torch.rand(v, device=dev), torch.empty(v, device=dev)
rate("vector add 2^26", lambda: torch.add(va, vb, out=vc), 3 * 4.0 * v)
