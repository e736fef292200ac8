"""The advisor's rules, in the order they are listed. Adding a rule: one module in `rules/`
with a `RULE`, one line here."""
from __future__ import annotations

from .rules import (aicpu_ops, amp, communication, data_pipeline, dataloader, dominant_op_type,
                    dynamic_shape,
                    environment, fused_optimizer, gc, host_dispatch, iteration_gap, long_tasks,
                    low_device_util, memory_operators, op_time_spread, recompilation, slow_link,
                    straggler, synchronize_stream, task_wait, transdata)
from .rules import block_dim, cube_efficiency, operator_no_bound, vector_efficiency

RULES = [
    host_dispatch.RULE,
    fused_optimizer.RULE,
    transdata.RULE,
    aicpu_ops.RULE,
    dominant_op_type.RULE,
    long_tasks.RULE,
    op_time_spread.RULE,
    task_wait.RULE,
    recompilation.RULE,
    iteration_gap.RULE,
    data_pipeline.RULE,
    environment.RULE,
    synchronize_stream.RULE,
    gc.RULE,
    memory_operators.RULE,
    dynamic_shape.RULE,
    dataloader.RULE,
    communication.RULE,
    low_device_util.RULE,
    amp.RULE,
    straggler.RULE,
    slow_link.RULE,
    operator_no_bound.RULE,
    block_dim.RULE,
    cube_efficiency.RULE,
    vector_efficiency.RULE,
]
PROFILE_RULES = [r for r in RULES if r.scope == "profile"]
RUN_RULES = [r for r in RULES if r.scope == "run"]
