"""Imported by the fork server the reader processes are forked from (spawned.py,
`reader_context`): at the readers' priority (`pool.lower_priority`), the imports of the load
stages, done once there and frozen out of the garbage collector's view
(`build.import_and_freeze`), so that each reader starts with them."""
from .pool import lower_priority

lower_priority()

from .build import import_and_freeze  # noqa: E402 (imported at the lower priority)

import_and_freeze()
