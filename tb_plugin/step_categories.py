"""Step categories: the parts of a step's time each producer's breakdown defines (a
`steps` table holds each as a `bd_<name>` column), with their display labels."""
from __future__ import annotations

import dataclasses

@dataclasses.dataclass(frozen=True)
class StepCategory:
    """One part of a step's time: the `steps` table holds it as `bd_<name>` (ns)."""

    name: str
    label: str

    @property
    def column(self) -> str:
        return f"bd_{self.name}"


def _categories(*pairs: tuple[str, str]) -> tuple[StepCategory, ...]:
    return tuple(StepCategory(name, label) for name, label in pairs)


# Each breakdown a producer (or an analysis) defines, in display order. A profile's
# `meta.step_categories` names the categories of one of these, by name.
# NPU: step_trace_time.csv, or the same numbers from Overlap Analysis events (docs/formats.md §2.8).
NPU_STEP_CATEGORIES = _categories(
    ("computing", "Computing"),
    ("communication_not_overlapped", "Communication (not overlapped)"),
    ("overlapped", "Overlapped"),
    ("free", "Free"),
)
# msprof graph-mode step_trace: FP to BP time, Iteration Refresh, and the rest of the iteration.
MSPROF_STEP_CATEGORIES = _categories(
    ("computing", "Computing"),
    ("iteration_refresh", "Iteration refresh"),
    ("other", "Other"),
)
# MindSpore <= 2.3 step_trace_raw: the gap before FP, forward + backward, what follows BP.
MINDSPORE_LEGACY_STEP_CATEGORIES = _categories(
    ("iteration_interval", "Iteration interval"),
    ("fp_and_bp", "FP and BP"),
    ("tail", "Tail"),
)
# GPU (kineto): torch-tb-profiler's activities in their priority order (highest first).
GPU_STEP_CATEGORIES = _categories(
    ("kernel", "Kernel"),
    ("memcpy", "Memcpy"),
    ("memset", "Memset"),
    ("communication", "Communication"),
    ("runtime", "Runtime"),
    ("dataloader", "DataLoader"),
    ("cpu_exec", "CPU Exec"),
    ("other", "Other"),
)

_STEP_CATEGORY_LABELS = {c.name: c.label for group in (
    NPU_STEP_CATEGORIES, MSPROF_STEP_CATEGORIES, MINDSPORE_LEGACY_STEP_CATEGORIES,
    GPU_STEP_CATEGORIES) for c in group}


def category_names(categories: tuple[StepCategory, ...]) -> list[str]:
    return [c.name for c in categories]


def step_category_label(name: str) -> str:
    """Display label of a breakdown category; one no breakdown declares is shown by name."""
    label = _STEP_CATEGORY_LABELS.get(name)
    return label if label is not None else name.replace("_", " ").capitalize()
