# Two set-up-and-go commands: `make demo` and `make test`. Each builds its own virtual
# environment from the package registries on first use; the demo installs only what it needs.
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.base: pyproject.toml
	@echo "make: first run: installing loopwright and its dependencies (httpx, pydantic, anyio, mcp, rich, ...)"
	@echo "make: into $(VENV) from the package registries; about 30-60 s, once (later runs start at once)"
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --progress-bar off -e .
	touch $@

$(VENV)/.installed: $(VENV)/.base
	@echo "make: installing the test dependencies into $(VENV) (the SDKs, pytest, PostgreSQL's driver, DBOS,"
	@echo "make: OpenTelemetry, MkDocs, ...); a few minutes the first time"
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

.PHONY: demo demo-routine test bench dist clean
demo: $(VENV)/.base
	$(VENV)/bin/loopwright demo

demo-routine: $(VENV)/.base
	$(VENV)/bin/loopwright demo routine

test: $(VENV)/.installed
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) bench/turn_overhead.py

dist: $(VENV)/.installed
	$(PY) -m build --outdir dist

clean:
	rm -rf $(VENV) build dist src/*.egg-info
