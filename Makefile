# Two set-up-and-go commands: `make demo` and `make test`. Each builds its own virtual
# environment from the package registries on first use; the demo installs only what it needs.
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.base: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed: $(VENV)/.base
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
