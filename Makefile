# memsql: `make demo` and `make test` do the whole set-up on a fresh machine (a local .venv).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test install chromium bench-quality bench-speed clean

# torch first (the CPU wheel pinned at 2.13.0, taken from local disk), then the rest with torch pinned as a
# constraint; yandex-pgmigrate last with --no-deps (its only hard need, psycopg2, comes as psycopg2-binary);
# finally the ONNX export of the packaged model weights (memsql.embedding.export_onnx).
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	echo "torch==2.13.0" > $(VENV)/constraints.txt
	$(PIP) install -q yandex-pgmigrate==1.0.13 --no-deps
	$(PIP) install -q -c $(VENV)/constraints.txt -e '.[test,tiktoken]'
	$(PY) -m memsql.embedding    # export the model to ONNX once (user cache dir) for the onnx / openvino backends
	touch $(STAMP)

install: $(STAMP)

# The browser tests (tests/test_web_browser.py) drive Debian's chromium through playwright and skip without it;
# playwright downloads no browser of its own here.
chromium:
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

demo: $(STAMP)
	$(PY) -m memsql.demo

test: $(STAMP)
	$(PY) -m pytest -q

bench-quality: $(STAMP)
	$(PY) bench/quality.py

bench-speed: $(STAMP)
	$(PY) bench/speed.py

clean:
	rm -rf $(VENV) .pytest_cache
