"""One hostile logdir and one real `tensorboard` over it, shared by the security e2e tests.

The logdir (under a temporary folder, next to an `outside/` folder that must never be read):
- `plain/`       a kineto run whose operator and kernel names start with = + - @ tab CR
- `longname/`    a kineto run with a 30-letter `aaa…a!` operator name (regex backtracking)
- `wide/`        a kineto run with more distinct operators than one table page holds
- `torch/`       a torch_npu span whose trace_view.json is a symlink to outside/secret.txt
- `extrun`       a symlink to a run directory outside the logdir
- `kinlink/`     a kineto trace file that is a symlink to a trace outside the logdir
- `bad\\xffrun/`  a run and a worker directory whose names are not UTF-8, one CSV unreadable
"""
from __future__ import annotations

import glob
import os
import shutil

import pytest

from tests.security.traces import write_kineto
from tests.tb_server import FIXTURES, TensorBoard

SECRET = "SECRET-7f3a9c-must-never-be-served"
SECRET_OP = "secret_op_7f3a9c"
LONG_NAME = "a" * 30 + "!"
WIDE_OPS = 10_050
FORMULA_OPS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
               "\tTabbed", "\rReturned", "aten::mm"]
FORMULA_KERNELS = ["=k_gemm", "plain_kernel", "-k_neg"]
LEVEL1_SPAN = sorted(glob.glob(os.path.join(FIXTURES, "torch_npu_level1", "*_ascend_pt")))[0]
BAD_RUN = b"bad\xffrun"
BAD_WORKER_DIR = b"node01\xff_23456_20240601000000000_ascend_pt"
# What the API calls them: the byte that is not UTF-8 written as an escape.
BAD_RUN_NAME = "bad\\xffrun"
BAD_WORKER_NAME = "node01\\xff_23456"


def build_logdir(top: str) -> tuple[str, str]:
    """(logdir, outside) under `top`."""
    logdir = os.path.join(top, "logdir")
    outside = os.path.join(top, "outside")
    os.makedirs(outside)
    secret = os.path.join(outside, "secret.txt")
    with open(secret, "w") as fh:
        fh.write(SECRET + "\n")
    write_kineto(os.path.join(outside, "extrun"), "host.1.pt.trace.json", [SECRET_OP],
                 [SECRET_OP + "_kernel"])
    outside_trace = write_kineto(outside, "other.pt.trace.json", [SECRET_OP], [])

    write_kineto(os.path.join(logdir, "plain"), "w.1.pt.trace.json", FORMULA_OPS,
                 FORMULA_KERNELS)
    write_kineto(os.path.join(logdir, "longname"), "w.1.pt.trace.json",
                 [LONG_NAME, "aten::add"], ["k"])
    write_kineto(os.path.join(logdir, "wide"), "w.1.pt.trace.json",
                 [f"op_{i}" for i in range(WIDE_OPS)], [])
    span = os.path.join(logdir, "torch", os.path.basename(LEVEL1_SPAN))
    shutil.copytree(LEVEL1_SPAN, span)
    trace = os.path.join(span, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    os.remove(trace)
    os.symlink(secret, trace)
    os.symlink(os.path.join(outside, "extrun"), os.path.join(logdir, "extrun"))
    os.makedirs(os.path.join(logdir, "kinlink"))
    os.symlink(outside_trace, os.path.join(logdir, "kinlink", "w.1.pt.trace.json"))

    bad_span = os.path.join(os.fsencode(logdir), BAD_RUN, BAD_WORKER_DIR)
    shutil.copytree(LEVEL1_SPAN, os.fsdecode(bad_span))
    unreadable = os.path.join(bad_span, b"ASCEND_PROFILER_OUTPUT", b"operator_details.csv")
    os.remove(unreadable)
    os.symlink(os.path.join(os.fsencode(logdir), b"missing\xff.csv"), unreadable)
    return logdir, outside


@pytest.fixture(scope="session")
def hostile(tmp_path_factory):
    return build_logdir(str(tmp_path_factory.mktemp("hostile")))


@pytest.fixture(scope="session")
def tb(hostile):
    with TensorBoard(hostile[0]).loaded() as server:  # (stopped even if it never answers)
        yield server
