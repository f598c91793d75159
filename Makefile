# Every target creates .venv from requirements.txt when it is missing or stale.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# pytest-xdist workers; CI has 2 cores.
JOBS   ?= auto

.PHONY: venv book test check lint bench assignments notebooks clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

## book: build the website into _build/html (warnings are errors, cells must not fail)
book: $(STAMP)
	$(VENV)/bin/jupyter-book build . --builder html -W -n --keep-going

## test: the whole test suite (builds the book once, grades every test class)
test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup

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

## notebooks: chapters as .ipynb in _build/notebooks (publish to the `notebooks` branch for Colab)
notebooks: $(STAMP)
	mkdir -p _build/notebooks/chapters
	for f in chapters/*.md; do $(VENV)/bin/jupytext --to ipynb -o _build/notebooks/$${f%.md}.ipynb $$f || exit 1; done

clean:
	rm -rf _build .grading
