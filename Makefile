# Every target creates .venv from requirements.txt when it is missing or stale.
# The first of these interpreters that exists and is Python 3.11 to 3.13 creates .venv (the
# pins need 3.11 or newer: numpy 2.4);
# `make venv PYTHON=/path/to/python3.12` picks one.
PYTHON ?= $(shell for p in python3 python3.13 python3.12 python3.11; do \
	  command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' \
	  2>/dev/null && { echo $$p; break; }; done)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The npm packages the website copies (package.json: Pyodide's core runtime, axe-core);
# `npm ci` installs exactly package-lock.json's versions and verifies their checksums.
NODE   := node_modules/.package-lock.json
# pytest-xdist workers; CI has 2 cores.
JOBS   ?= auto

.PHONY: venv node book test check lint bench assignments notebooks clean

venv: $(STAMP)

# The learners' JupyterLab settings (tools/jupyterlab/: chapters open as notebooks, no nbgrader
# menus; instructors.md says how to get those back) go into .venv, as on Binder (binder/postBuild).
LABSETTINGS := tools/jupyterlab_settings.py tools/jupyterlab/overrides.json tools/jupyterlab/page_config.json

$(STAMP): requirements.txt pyproject.toml $(LABSETTINGS)
	@test -x $(PY) || test -n "$(PYTHON)" || { echo "make venv needs Python 3.11 to 3.13 (python3 on PATH, or PYTHON=...)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(PY) tools/jupyterlab_settings.py
	touch $@

node: $(NODE)

$(NODE): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make book needs Node.js and npm (Debian: apt-get install nodejs npm)"; exit 1; }
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

## book: build the website into _build/html (warnings are errors, cells must not fail)
book: $(STAMP) $(NODE)
	$(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

## test: the whole test suite (builds the book once, grades every test class); the 25 slowest
## tests are listed at the end (where the time goes)
test: $(STAMP) $(NODE)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup --durations=25

## check: the inner loop (under 2 minutes): ruff, then every test not marked book or slow
## (unit tests of the grading pieces, reference and check tests, release drift)
check: lint
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -m "not book and not slow" -q

## lint: ruff with the rules in pyproject.toml
lint: $(STAMP)
	$(VENV)/bin/ruff check .

## bench: benchmarks/ (ratios against a baseline measured in the same run)
bench: $(STAMP)
	mkdir -p _build
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

## assignments: regenerate exercises/ from solutions/ with nbgrader
assignments: $(STAMP)
	$(PY) -m autograder release

## publish: build the website and push _build/html (pages, and the executed chapter notebooks
## in _sources/ that the Colab buttons open) to the gh-pages branch of the `origin` remote
publish: book
	touch _build/html/.nojekyll
	rm -rf _build/html/.git
	git -C _build/html init -q -b gh-pages
	git -C _build/html add -A
	git -C _build/html -c user.name=course -c user.email=course@localhost commit -q -m "Publish the course website"
	git -C _build/html push -f "$$(git remote get-url origin)" gh-pages
	rm -rf _build/html/.git

clean:
	rm -rf _build .grading node_modules
