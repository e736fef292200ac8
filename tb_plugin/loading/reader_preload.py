"""Imported by the fork server the reader processes are forked from (spawned.py,
`reader_context`): at the readers' priority (`pool.lower_priority`), the imports of the load
stages, done once there and frozen out of the garbage collector's view
(`build.import_and_freeze`), so that each reader starts with them, and Arrow's allocator the
readers use (`build.use_reader_memory_pool`).

The collector is off during these imports: they only make objects that live as long as the
process (modules, classes, functions), which its generational passes would walk again and
again for nothing while pandas, pyarrow and our modules load (~8 % of the imports' CPU,
which every reader waits for); `import_and_freeze` then freezes them.

NumPy's OpenBLAS starts a thread per core at import and they spin for a while: ~0.1 s of
CPU in a fork server that imports in 0.3 s, taken from TensorBoard's start on the other
core, for nothing: a reader is one thread on one core by design (the pool runs one per
core) and no load stage multiplies matrices. One BLAS thread, unless the user chose."""
import gc
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before anything imports NumPy
gc.disable()

from .pool import lower_priority  # noqa: E402

lower_priority()

from .build import import_and_freeze, use_reader_memory_pool  # noqa: E402 (lower priority)

import_and_freeze()
use_reader_memory_pool()
gc.enable()
