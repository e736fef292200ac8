"""tensorboard-plugin-npu-profiler: profiler views for Ascend NPU, GPU and CPU training."""
import os

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# The fork server's start with the `tensorboard` command (tb_plugin/prestart.py): its .pth
# goes to the top of the install (site-packages), where Python's `site` runs it.
PRESTART_PTH = os.path.join("tb_plugin", "prestart.pth")
PRESTART_PTH_NAME = "tensorboard_plugin_npu_profiler-prestart.pth"  # prestart.PTH_NAME


class BuildPyWithPrestart(build_py):
    """build_py, plus the prestart .pth at the top of the built tree (so of the wheel).
    An editable install does not carry it (setuptools builds no tree): `make install`
    adds it (Makefile)."""

    def run(self):
        super().run()
        self.copy_file(os.path.join(HERE, PRESTART_PTH),
                       os.path.join(self.build_lib, PRESTART_PTH_NAME))

    def get_outputs(self, include_bytecode=1):
        return [*super().get_outputs(include_bytecode),
                os.path.join(self.build_lib, PRESTART_PTH_NAME)]


with open(os.path.join(HERE, "README.md"), encoding="utf-8") as fh:
    LONG_DESCRIPTION = fh.read()

setup(
    name="tensorboard-plugin-npu-profiler",
    version="0.1.0",
    description="TensorBoard plugin for Ascend NPU (torch_npu, MindSpore, msprof) and PyTorch"
                " kineto profiler data, built for multi-GB traces",
    long_description=LONG_DESCRIPTION,
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["tb_plugin", "tb_plugin.*"]),
    # The readers' compiled helpers (tb_plugin/readers/_native.c: the trace events' field
    # scanner, exact µs text -> ns): optional, so an install without a C compiler still
    # works (every helper has a numpy/msgspec counterpart with the same results, slower);
    # wheels built for a platform carry it compiled.
    ext_modules=[Extension("tb_plugin.readers._native",
                           ["tb_plugin/readers/_native.c"],
                           extra_compile_args=["-O3"], optional=True)],
    package_data={"tb_plugin": ["static/*", "static/**/*", "prestart.pth"]},
    cmdclass={"build_py": BuildPyWithPrestart},
    include_package_data=True,
    install_requires=[
        "tensorboard>=2.11",
        "protobuf>=3.20",
        "werkzeug>=2.0",
        "pandas>=2.0",
        "numpy>=1.23",
        "pyarrow>=14",
        "msgspec>=0.18",
        "regex>=2023.0",  # trace search: time-limited regular expressions
        "fsspec>=2023.6",  # remote logdirs (storage.py); each backend is an extra below
    ],
    extras_require={
        # Reading profiles on a Dask cluster (NPU_PROFILER_DASK_SCHEDULER, cache build --scheduler).
        "dask": ["distributed>=2023.1"],
        "test": ["pytest>=7", "requests>=2.28", "playwright>=1.40", "psutil>=5.9",
                 "distributed>=2023.1",
                 "wheel>=0.38",  # tests/unit/test_wheel.py builds this package's wheel
                 # remote logdirs against a real S3-compatible server on loopback.
                 # moto 5.2.6 checks ListObjectsV2 against an "s3:ListObjectsV2" action
                 # that AWS does not have (AWS checks s3:ListBucket), so a user granted
                 # exactly s3:ListBucket is refused: the permission tests need < 5.2.6.
                 "moto[server]>=5.0,<5.2.6", "s3fs>=2023.6"],
        "s3": ["s3fs>=2023.6"],
        "gcs": ["gcsfs>=2023.6"],
        "hdfs": ["pyarrow>=14"],  # fsspec's hdfs:// is pyarrow's HadoopFileSystem (libhdfs)
        "azure": ["adlfs>=2023.4"],
    },
    entry_points={
        "tensorboard_plugins": [
            "npu_profiler = tb_plugin.plugin:NpuProfilerLoader",
        ],
        "console_scripts": [
            "npu-profiler = tb_plugin.cli:main",
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Environment :: Web Environment",
        "License :: OSI Approved :: Apache Software License",
    ],
)
