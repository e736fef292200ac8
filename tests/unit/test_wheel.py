"""A wheel built from this checkout carries the readers' compiled helpers and the bundled
frontend, and used as installed (unpacked on the path, nothing compiled) it loads them:
an install from a wheel needs no C compiler. (The platform wheels for PyPI are built by
cibuildwheel, .github/workflows/wheels.yml, which tests each the same way.)"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the test venv's setuptools, no download.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), ROOT], check=True, capture_output=True, timeout=600)
    wheels = glob.glob(str(out / "*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_is_for_this_platform_and_carries_the_helpers(wheel):
    name = os.path.basename(wheel)
    assert not name.endswith("-none-any.whl"), name  # a platform wheel: it has compiled code
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert any(n.startswith("tb_plugin/readers/_native.") and n.endswith((".so", ".pyd"))
               for n in names), names
    assert "tb_plugin/static/index.js" in names
    assert not any(n.startswith(("tests/", "benchmarks/", "fixtures/")) for n in names)
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry


def test_the_wheel_installs_the_prestart_line_into_site_packages(wheel):
    """The .pth of tb_plugin/prestart.py at the top of the wheel (pip puts it in
    site-packages, where `site` runs it), the checkout's line unchanged."""
    from tb_plugin import prestart

    with zipfile.ZipFile(wheel) as zf:
        assert prestart.PTH_NAME in zf.namelist()
        shipped = zf.read(prestart.PTH_NAME)
        record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
        assert prestart.PTH_NAME in zf.read(record).decode()  # (pip uninstall removes it)
    with open(prestart.PTH_SOURCE, "rb") as fh:
        assert shipped == fh.read()


def test_the_unpacked_wheel_loads_its_compiled_helpers(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    probe = ("import tb_plugin, tb_plugin.readers.native as n; "
             "print(tb_plugin.__file__); print(n.helpers is not None)")
    env = {k: v for k, v in os.environ.items() if k != "NPU_PROFILER_NATIVE"}
    env["PYTHONPATH"] = str(site)
    env["CC"] = "/bin/false"  # (nothing may need compiling)
    out = subprocess.run([sys.executable, "-S", "-c", "import site, sys; "
                          "sys.path += site.getsitepackages(); " + probe],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out[0].startswith(str(site)), out  # this wheel's package, not the checkout
    assert out[1] == "True"
