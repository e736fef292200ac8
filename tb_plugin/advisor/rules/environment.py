"""environment: environment variables recorded in profiler_metadata.json (ENV_VARIABLES),
checked as msprof-analyze's environment checker does. ACLNN_CACHE_LIMIT and
HOST_CACHE_CAPACITY only matter when the host is the bottleneck, so they are checked only when
the device's free time is at least `host_bound_free_pct` of the step. No time estimate.
"""
from __future__ import annotations

from ..core import NotApplicable, Rule


def _checks(env: dict, host_bound: bool, t) -> list[tuple[str, str, str, str]]:
    """(variable, severity, problem, advice) for every variable that needs a change."""
    out = []
    get = lambda k: str(env.get(k) or "").strip()
    if get("ASCEND_LAUNCH_BLOCKING") == "1":
        out.append(("ASCEND_LAUNCH_BLOCKING", "high", "ASCEND_LAUNCH_BLOCKING=1 makes every op "
                    "launch synchronous", "unset ASCEND_LAUNCH_BLOCKING (it is a debugging aid)."))
    lvl = get("ASCEND_GLOBAL_LOG_LEVEL")
    if lvl and lvl != "3":
        out.append(("ASCEND_GLOBAL_LOG_LEVEL", "medium", f"ASCEND_GLOBAL_LOG_LEVEL={lvl} writes "
                    "more logs than needed", "set ASCEND_GLOBAL_LOG_LEVEL=3 (error) for training."))
    alloc = get("PYTORCH_NPU_ALLOC_CONF")
    if "expandable_segments:true" not in alloc.replace(" ", "").lower():
        out.append(("PYTORCH_NPU_ALLOC_CONF", "low", "the caching allocator runs without "
                    "expandable segments", "set PYTORCH_NPU_ALLOC_CONF=expandable_segments:True "
                    "to reduce fragmentation and re-allocation."))
    for var in ("HCCL_RDMA_TC", "HCCL_RDMA_SL"):
        if get(var):
            out.append((var, "low", f"{var} is set ({get(var)})", f"unset {var} unless the "
                        "network team asked for it; a wrong traffic class slows RDMA."))
    if get("HCCL_ALGO"):
        out.append(("HCCL_ALGO", "low", f"HCCL_ALGO is forced to {get('HCCL_ALGO')}",
                    "unset HCCL_ALGO so HCCL picks the algorithm per op and topology."))
    if host_bound:
        try:
            limit = float(get("ACLNN_CACHE_LIMIT") or 0)
        except ValueError:
            limit = 0
        if limit < t["aclnn_cache_limit"]:
            out.append(("ACLNN_CACHE_LIMIT", "low", "the aclnn cache is small or unset on a "
                        "host-bound profile", "raise ACLNN_CACHE_LIMIT (e.g. 100000) so fewer "
                        "aclnn ops are prepared again."))
        if get("HOST_CACHE_CAPACITY") in ("", "0"):
            out.append(("HOST_CACHE_CAPACITY", "low", "the host cache is off on a host-bound "
                        "profile", "set HOST_CACHE_CAPACITY (e.g. 20) to cache op "
                        "preparation on the host."))
    return out


def check(ctx):
    ctx.require_npu()
    env = ctx.meta("env_variables")
    if not isinstance(env, dict) or not env:
        raise NotApplicable("no environment variables recorded (profiler_metadata.json "
                            "ENV_VARIABLES)")
    free = ctx.category_pct("free")
    host_bound = free is not None and free >= ctx.t["host_bound_free_pct"]
    out = []
    for var, sev, problem, advice in _checks(env, host_bound, ctx.t):
        evidence = {"variable": var, "value": env.get(var), "free_pct_of_step": free}
        out.append(ctx.finding("environment", var, f"Environment: {var}", problem + ".",
                               advice[0].upper() + advice[1:], None, evidence,
                               [ctx.link("overview")], severity=sev))
    return out


RULE = Rule("environment", "Environment variables", check)
