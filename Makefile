# Two set-up-and-go commands: `make demo` and `make test`. Each builds its own virtual
# environment from the package registries on first use.
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

.PHONY: demo test bench clean
demo: $(VENV)/.installed
	$(VENV)/bin/loopwright demo

test: $(VENV)/.installed
	$(PY) -m pytest

bench: $(VENV)/.installed
	$(PY) bench/turn_overhead.py

clean:
	rm -rf $(VENV) build src/*.egg-info
