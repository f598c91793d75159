"""The GPU check for chapter 5 and ex05: ``python benchmarks/gpu_check.py``.

Runs the course's PyTorch attention (autograder/reference/torch_attention.py) on every device
present, the CPU and, when there is one, CUDA:

1. agreement with ``F.scaled_dot_product_attention`` in float64, float32, float16 and
   bfloat16 (boolean, float and causal masks), and of ``MultiHeadAttention`` with
   ``nn.MultiheadAttention`` (copied weights, inverted boolean mask);
2. every hidden check of ex05 (autograder/checks/ex05/, which itself runs on CUDA when
   present) against the reference, and one device bug that only CUDA can expose: a causal
   mask built on the CPU must fail ``sdpa_is_causal`` on a GPU;
3. a small timing of the reference against torch's fused kernel (informative, not a test).

On a machine without CUDA it runs the CPU part and prints that CUDA was skipped. Exit
status 0 when every check passes, 1 otherwise. Takes a few seconds on a GPU.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from autograder.checks import ex05  # noqa: E402
from autograder.reference.torch_attention import (  # noqa: E402
    MultiHeadAttention,
    copy_weights_from_torch,
    scaled_dot_product_attention,
)

TOL = {torch.float64: 1e-10, torch.float32: 1e-3, torch.float16: 1e-2, torch.bfloat16: 5e-2}
failures: list[str] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    print(f"  {'PASS' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""))
    if not ok:
        failures.append(name)


def agreement(device: str) -> None:
    gen = torch.Generator().manual_seed(0)
    B, H, L, S, E = 2, 4, 64, 96, 32
    for dtype, tol in TOL.items():
        q, k, v = (torch.randn(B, H, T, E, generator=gen).to(device, dtype) for T in (L, S, S))
        mask = torch.rand(L, S, generator=gen) < 0.7
        mask[:, 0] = True
        float_mask = torch.randn(L, S, generator=gen).to(device, dtype)
        for label, kwargs in (("no mask", {}), ("bool mask", {"attn_mask": mask.to(device)}),
                              ("float mask", {"attn_mask": float_mask}), ("is_causal", {"is_causal": True})):
            ours = scaled_dot_product_attention(q, k, v, **kwargs)
            theirs = F.scaled_dot_product_attention(q, k, v, **kwargs)
            err = (ours.double() - theirs.double()).abs().max().item()
            check(f"sdpa {str(dtype)[6:]:<8} {label:<10} vs F.sdpa on {device}",
                  ours.dtype == dtype and ours.device.type == device and err <= tol,
                  f"max error {err:.1e}")
    torch.manual_seed(0)
    builtin = nn.MultiheadAttention(64, 8, batch_first=True).to(device, torch.float64).eval()
    ours = copy_weights_from_torch(MultiHeadAttention(64, 8), builtin)
    x = torch.randn(4, 32, 64, generator=gen, dtype=torch.float64).to(device)
    mask = (torch.rand(4, 8, 32, 32, generator=gen) < 0.7).to(device)
    mask[..., 0] = True
    with torch.no_grad():
        err = (ours(x, attn_mask=mask) - builtin(
            x, x, x, attn_mask=~mask.reshape(32, 32, 32), need_weights=False)[0]).abs().max().item()
    check(f"MultiHeadAttention vs nn.MultiheadAttention on {device}", err <= 1e-10,
          f"max error {err:.1e}")


def grading_checks() -> None:
    names = sorted(n for n in dir(ex05) if n.startswith(("sdpa_", "mha_"))
                   and n != "mha_hint")  # a diagnosis of the visible tests, not a check
    for name in names:
        target = MultiHeadAttention if name.startswith("mha_") else scaled_dot_product_attention
        try:
            getattr(ex05, name)(target)
            check(f"ex05.{name} on {', '.join(ex05.DEVICES)}", True)
        except Exception as exc:  # noqa: BLE001 - any failure of a check is reported, not raised
            check(f"ex05.{name} on {', '.join(ex05.DEVICES)}", False,
                  f"{type(exc).__name__}: {str(exc)[:200]}")


def cpu_mask_bug() -> None:
    """A causal mask created without device=... works on the CPU and must fail on CUDA."""
    def sdpa_mask_on_cpu(query, key, value, attn_mask=None, is_causal=False):
        # Written out, not through the reference, which moves a mask to the query's device.
        L, S = query.shape[-2], key.shape[-2]
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
        if is_causal:
            attn_mask = torch.ones(L, S, dtype=torch.bool).tril()  # the bug: no device=
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ value

    q, k, v = (torch.randn(2, 5, 4, dtype=torch.float64) for _ in range(3))
    check("the same code is right on the CPU", torch.allclose(
        sdpa_mask_on_cpu(q, k, v, is_causal=True), scaled_dot_product_attention(q, k, v, is_causal=True)))
    message = "it passed"
    try:
        ex05.sdpa_is_causal(sdpa_mask_on_cpu)
    except AssertionError as exc:
        message = str(exc)
    check("a causal mask built on the CPU fails ex05.sdpa_is_causal on CUDA", "cuda" in message,
          message[:300])


def timing(device: str) -> None:
    B, H, T, E = (8, 8, 1024, 64) if device == "cuda" else (2, 4, 256, 64)
    dtype = torch.float16 if device == "cuda" else torch.float32
    q, k, v = (torch.randn(B, H, T, E, device=device, dtype=dtype) for _ in range(3))

    def run(fn, reps=10):
        fn(q, k, v, is_causal=True)
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(q, k, v, is_causal=True)
        if device == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) / reps

    t_ours, t_torch = run(scaled_dot_product_attention), run(F.scaled_dot_product_attention)
    flops = 4 * B * H * T * T * E  # QK^T and weights @ V, multiply-adds counted as 2
    print(f"  time  causal attention {B}x{H}x{T}x{E} {str(dtype)[6:]} on {device}: course "
          f"{t_ours * 1e3:.2f} ms ({flops / t_ours / 1e9:.1f} GFLOP/s), torch fused "
          f"{t_torch * 1e3:.2f} ms ({flops / t_torch / 1e9:.1f} GFLOP/s)")


def main() -> int:
    cuda = torch.cuda.is_available()
    print(f"torch {torch.__version__}; CUDA: "
          + (torch.cuda.get_device_name(0) if cuda else "not available"))
    devices = ["cpu"] + (["cuda"] if cuda else [])
    for device in devices:
        print(f"[{device}] agreement with torch's built-ins")
        agreement(device)
    print(f"[{', '.join(ex05.DEVICES)}] hidden checks of ex05 on the reference")
    grading_checks()
    if cuda:
        cpu_mask_bug()
    for device in devices:
        timing(device)
    if not cuda:
        print("SKIPPED: CUDA checks (no CUDA device); the CPU checks above ran")
    print(f"{'FAILED: ' + ', '.join(failures) if failures else 'all checks passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
