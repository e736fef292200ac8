"""pandas, imported where it is first used: `from .lazy import pd` (the same `pd` as
`import pandas as pd` once it is touched).

Why: TensorBoard's process imports the plugin's modules when it starts, and pandas is a
fifth of a second of one core there (~0.2 s of ~0.3 s for the loader and routes), on the
cores the readers need to build the first spans. The first answers of the views come
from files the readers stored (analysis/stored.py: JSON sent as written, table pages cut
in Arrow), so TensorBoard imports pandas only when a view computes something (another
grouping, a search, the timeline's tables). A reader imports pandas in its fork server
before any span, as before (loading/build.py `import_and_freeze`).

Only modules whose import runs no pandas code may use it: a module-level `pd.X` would
import pandas at once (tests/unit/test_lazy_pandas.py checks the modules TensorBoard
imports at its start).
"""
from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """A module imported on the first attribute read, then standing for it: its names are
    copied into this object, so later reads cost what a module's do."""

    def __getattr__(self, attr: str):
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)  # (a name the module makes on demand, too)

    def __repr__(self) -> str:
        return f"<lazily imported module {self.__name__!r}>"


pd = LazyModule("pandas")
