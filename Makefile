# Deep learning on GPUs — CPU vs GPU: build the site, run the tests, work on the lesson.
# Every target creates the virtual environment (.venv) from the pinned requirements the first time.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
KERNEL ?= gpulesson
# Extra pytest arguments, e.g. make test PYTEST_ARGS="-k hdf5 -x"
PYTEST_ARGS ?=

.PHONY: help site test lint lab kernel notebooks reference figures lock clean distclean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

$(BIN)/.installed: requirements/*.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements/dev.txt -c requirements/constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps --editable .
	touch $@

venv: $(BIN)/.installed  ## create the virtual environment only

site: $(BIN)/.installed  ## build the lesson site into _build/html (no notebook is executed)
	$(BIN)/jupyter-book build . --builder html --warningiserror --keep-going
	@echo "Open _build/html/index.html in a browser, or serve it: $(BIN)/python -m http.server -d _build/html"

test: $(BIN)/.installed  ## run every test: site, episodes, notebooks (synthetic data, quick mode), helpers
	tools/ensure_chromium.sh  # for the browser tests: installs Debian's Chromium if root, else says how
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(BIN)/.installed  ## ruff, codespell, notebooks in sync with the episodes and clean (also part of make test)
	$(BIN)/ruff check
	$(BIN)/codespell
	$(BIN)/python tools/make_notebooks.py --check

notebooks: $(BIN)/.installed  ## regenerate notebooks/*.ipynb and gpulesson/lesson.py from the episodes
	$(BIN)/python tools/make_notebooks.py

reference: $(BIN)/.installed  ## record every reference measurement here (CPU, and GPU if visible), redraw, refill
	$(BIN)/python -m gpulesson.reference_run      # episode 4: the CNN
	$(BIN)/python -m gpulesson.matmul             # episode 5: matrix multiplication
	$(BIN)/python -m gpulesson.small_models       # episode 6: the small MLP and the sweep
	$(BIN)/python -m gpulesson.torch_reference    # episode 7: PyTorch (needs requirements/torch.txt)
	$(BIN)/python -m gpulesson.feeding            # episode 8: input pipelines (see --help for sizes)
	$(MAKE) figures notebooks
	$(MAKE) executed                              # the pages' outputs: same machine, same date

# The data must be chosen: LESSON_DATA=cifar10 make executed (or synthetic); RECORD_ARGS="--only 04".
.PHONY: executed
executed: $(BIN)/.installed  ## run every notebook here, full size, and keep its outputs for the site in executed/
	$(BIN)/python tools/record_run.py $(RECORD_ARGS)

figures: $(BIN)/.installed  ## redraw every figure from its script in fig/ (measured ones from results/)
	for script in fig/*/*.py; do $(BIN)/python $$script || exit 1; done

kernel: $(BIN)/.installed  ## register this environment as the Jupyter kernel "$(KERNEL)"
	$(BIN)/python -m ipykernel install --user --name $(KERNEL) --display-name "Python ($(KERNEL))"

lab: kernel  ## start JupyterLab on the lesson folder, showing notebooks/, with the lesson kernel
	# The root stays the lesson folder: notebooks show figures from ../fig and link to ../setup.md.
	$(BIN)/jupyter lab --notebook-dir=. --LabApp.default_url=/lab/tree/notebooks

lock: $(BIN)/.installed  ## rewrite requirements/constraints.txt from the environment
	tools/lock.sh $(BIN)/python > requirements/constraints.txt

clean:  ## remove the built site
	rm -rf _build

distclean: clean  ## also remove the virtual environment
	rm -rf $(VENV)
