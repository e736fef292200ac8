"""Record the small real kineto traces of fixtures/real/torch213_* with a CPU torch.

Runs in a throwaway virtualenv outside the repository (never in the project's own):

    python3 -m venv /tmp/torch-venv && /tmp/torch-venv/bin/pip install torch==2.13.0 numpy
    /tmp/torch-venv/bin/python benchmarks/exactness/record.py fixtures/real

Each run is a real `torch.profiler` session (schedule wait=1, warmup=1, active=3, so three
`ProfilerStep#N` windows; record_shapes=True) written by `tensorboard_trace_handler` as
`<run>/<worker>.<ms>.pt.trace.json.gz`:
- torch213_cnn: a small CNN (2 conv + pool + linear) training on random 8x3x32x32 batches;
- torch213_transformer: a 2-layer TransformerEncoder (d_model 32) training step;
- torch213_dataloader_w0 / _w2: a DataLoader over a dataset whose __getitem__ sleeps 2 ms,
  num_workers 0 and 2 (the `enumerate(DataLoader)#...__next__` ranges);
- torch213_multithread: each step runs matmuls on the main thread and on a second thread
  (ops on two threads, one `record_function` range on the second; recorded with
  `_ExperimentalConfig(profile_all_threads=True)`).
"""
from __future__ import annotations

import os
import sys
import threading
import time

import torch
from torch import nn
from torch._C._profiler import _ExperimentalConfig
from torch.profiler import ProfilerActivity, profile, record_function, schedule, \
    tensorboard_trace_handler

STEPS = 5  # wait 1 + warmup 1 + active 3


def _profiled(out_dir: str, run: str, step_fn, **extra) -> None:
    d = os.path.join(out_dir, run)
    os.makedirs(d, exist_ok=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, **extra,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(d, worker_name="worker0",
                                                          use_gzip=True)) as prof:
        for i in range(STEPS):
            step_fn(i)
            prof.step()


def cnn(out_dir):
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))

    def step(_):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    _profiled(out_dir, "torch213_cnn", step)


def transformer(out_dir):
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(4, 16, 32)

    def step(_):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
    _profiled(out_dir, "torch213_transformer", step)


class SlowDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.full((16,), float(i)), i % 4


def dataloader(out_dir, workers):
    model = nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=4, num_workers=workers)
    it = iter(loader)

    def step(_):
        x, y = next(it)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    _profiled(out_dir, f"torch213_dataloader_w{workers}", step)


def multithread(out_dir):
    a, b = torch.randn(64, 64), torch.randn(64, 64)

    def side():
        with record_function("side_thread_work"):
            for _ in range(3):
                torch.mm(a, b).relu_()

    def step(_):
        t = threading.Thread(target=side)
        t.start()
        for _ in range(3):
            torch.mm(b, a).sigmoid_()
        t.join()
    # Threads started inside the session are recorded only with profile_all_threads.
    _profiled(out_dir, "torch213_multithread", step,
              experimental_config=_ExperimentalConfig(profile_all_threads=True))


def main(argv=None) -> int:
    out_dir = (argv or sys.argv[1:] or ["fixtures/real"])[0]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cnn(out_dir)
    transformer(out_dir)
    dataloader(out_dir, 0)
    dataloader(out_dir, 2)
    multithread(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
