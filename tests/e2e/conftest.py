"""Fixtures shared by the end-to-end tests."""
from __future__ import annotations

import pytest

from tests.tb_server import generate_large


@pytest.fixture(scope="session")
def large_logdir(tmp_path_factory):
    """One span whose timeline keeps a reader busy for seconds (about 2.5 s on a 2-core CI
    machine at 200 MB), long enough to interrupt it or hold requests while it is built.
    Generated once per session: its tests only read it, each TensorBoard with its own cache."""
    return generate_large(str(tmp_path_factory.mktemp("large") / "large"), trace_mb=200)
