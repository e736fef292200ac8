# Two entry points for a fresh machine (see README):
#   make demo  - virtualenv, install, TensorBoard on 127.0.0.1:6006 with the bundled fixtures
#   make test  - install test extras, chromium, frontend deps; run the whole suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 6006

.PHONY: demo test install install-test chromium frontend-test bundle-check py-test browser-test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# (an editable install does not carry the .pth a wheel installs: tb_plugin/prestart.py)
PRESTART_LINE = $(PY) -c "from tb_plugin import prestart; prestart.install_line()"

install: $(PY)
	$(PY) -m pip install -q -e .
	$(PRESTART_LINE)

demo: install
	$(VENV)/bin/tensorboard --logdir fixtures --host 127.0.0.1 --port $(PORT)

install-test: $(PY)
	$(PY) -m pip install -q -e '.[test]' -c tests/constraints.txt
	$(PRESTART_LINE)

chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "installing Debian chromium for browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	  || echo "WARNING: could not install chromium; browser tests will be skipped"; \
	fi

frontend-test:
	cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm test

bundle-check:
	bash frontend/check_bundle.sh

py-test:
	$(PY) -m pytest -q -m "not browser" tests

browser-test:
	$(PY) -m pytest -q -m browser tests

test: install-test chromium frontend-test bundle-check
	$(PY) -m pytest -q tests

bench: install-test
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build dist *.egg-info test-artifacts
