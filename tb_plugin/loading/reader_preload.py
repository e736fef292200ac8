"""Imported by the fork server the reader processes are forked from (spawned.py,
`reader_context`): at the readers' priority (`pool.lower_priority`), the imports of the load
stages, done once there and frozen out of the garbage collector's view
(`build.import_and_freeze`), so that each reader starts with them, and Arrow's allocator the
readers use (`build.use_reader_memory_pool`).

The collector is off during these imports: they only make objects that live as long as the
process (modules, classes, functions), which its generational passes would walk again and
again for nothing while pandas, pyarrow and our modules load (~8 % of the imports' CPU,
which every reader waits for); `import_and_freeze` then freezes them."""
import gc

gc.disable()

from .pool import lower_priority  # noqa: E402

lower_priority()

from .build import import_and_freeze, use_reader_memory_pool  # noqa: E402 (lower priority)

import_and_freeze()
use_reader_memory_pool()
gc.enable()
