"""Generated profiles with one planted problem each (fixtures/generate.py knobs), read with
the plugin's own readers, for the advisor's rule tests."""
from __future__ import annotations

import os

from fixtures import generate as g
from tb_plugin import discovery, readers
from tb_plugin.analysis import derive

CLEAN = g.ADVISOR_CLEAN


def config(producer="torch_npu", **knobs) -> g.Config:
    base = dict(producer=producer, level="Level1", spans=1, steps=3, first_step=5, layers=2,
                seed=7001, host="plant", base_pid=4242)
    if producer == "kineto":
        base.update(task_queue=False, worker="plant-host_4242", layers=4)
    else:  # every kernel bound by some pipe, Block Num a multiple of the cores (PMU rules quiet)
        base.update(pmu="full")
    base.update(CLEAN)
    base.update(knobs)
    return g.Config(**base)


def read_all(logdir: str) -> list:
    """[(span source, profile)] of every span under logdir, read fully (views + trace)."""
    runs, _ = discovery.discover(logdir)
    out = []
    for run in runs.values():
        for span in run.spans():
            p = readers.read(span, None, stage="all")
            derive.complete(p)
            out.append((span, p))
    return out


def planted(tmp_path, producer="torch_npu", **knobs):
    """(job truth, profile) of a one-rank, one-span run with `knobs` planted."""
    cfg = config(producer, **knobs)
    out = os.path.join(str(tmp_path), "run")
    job = g.write_run(cfg, out)
    profiles = read_all(str(tmp_path))
    assert len(profiles) == 1
    return job, profiles[0][1]
