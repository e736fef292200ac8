"""Imported by the fork server the reader processes are forked from (spawned.py,
`reader_context`): the imports of the load stages, done once there and frozen out of the
garbage collector's view (`build.import_and_freeze`), so that each reader starts with them,
Arrow's allocator the readers use (`build.use_reader_memory_pool`), then the readers'
priority (`pool.lower_priority`), which every reader forked from here inherits.

The imports run at TensorBoard's priority: every reader waits for them, and beside them
TensorBoard only builds its app (its web files, our routes: no user is answered before
that), so at the readers' priority they only came later (B's readers started 0.07 s later
on two cores, and TensorBoard's first answer came no sooner).

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

from .build import import_and_freeze, use_reader_memory_pool  # noqa: E402
from .pool import lower_priority  # noqa: E402

import_and_freeze()
use_reader_memory_pool()
gc.enable()
lower_priority()  # (after the imports: see the docstring)
