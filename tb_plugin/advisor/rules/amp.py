"""amp (GPU / kineto): matrix kernels (GEMM / convolution) run in single precision while no
half-precision (fp16 / bf16 / tensor-core) kernel runs at all: automatic mixed precision is
off. Fires when such kernels take `amp_min_gemm_pct` of device time. Impact (estimate): half
of their time per step (tensor cores are at least twice as fast on these kernels).
"""
from __future__ import annotations

import numpy as np

from ..core import Rule, matching_codes, us

ADVICE = ("Enable automatic mixed precision: torch.autocast(device_type='cuda', "
          "dtype=torch.bfloat16) (or float16 with torch.cuda.amp.GradScaler); on Ascend the "
          "equivalent is torch_npu's autocast / apex O2, on MindSpore amp_level='O2'/'O3'.")
MATRIX = r"gemm|conv|cutlass|cublas|matmul|dot_kernel|wgrad|dgrad"
HALF = r"f16|fp16|bf16|half|h884|h1688|h16816|s16816|hmma|tensorop|884|1688|16816|_h_|bfloat16"


def check(ctx):
    ctx.require_gpu()
    ctx.require_kernels()
    k = ctx.compute_kernels
    if len(k) == 0 or ctx.device_ns <= 0:
        return []
    half = matching_codes(k["name"], HALF)
    if half.any():
        return []
    mat = matching_codes(k["name"], MATRIX)
    d = k["dur_ns"].to_numpy(dtype=np.int64)
    share = float(d[mat].sum()) / ctx.device_ns * 100.0
    if share < ctx.t["amp_min_gemm_pct"]:
        return []
    per_step = ctx.per_step(us(d[mat].sum()))
    names = k[mat]["name"].astype(str).value_counts()
    evidence = {"fp32_matrix_share_pct": share, "fp32_matrix_per_step_us": per_step,
                "half_precision_kernels": 0,
                "kernels": [{"name": n, "count": int(c)} for n, c in names.head(5).items()]}
    msg = (f"Single-precision GEMM / convolution kernels take {share:.1f}% of GPU time and no "
           f"half-precision kernel runs.")
    return [ctx.finding("amp", "amp", "Mixed precision is off", msg, ADVICE, per_step * 0.5,
                        evidence, [ctx.link("kernels", search=str(names.index[0]))])]


RULE = Rule("amp", "Automatic mixed precision", check)
