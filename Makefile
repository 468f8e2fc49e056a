# Deep learning on GPUs — CPU vs GPU: build the site, run the tests, work on the lesson.
# The targets create their virtual environment from the pinned requirements the first time:
# 'make site' a small one that only builds the site (.venv-site), 'make lab' and 'make kernel' the
# learner's one (.venv, requirements/lab.txt: no test tools, CUDA libraries or PyTorch), the others
# the full one (.venv again, completed with everything the tests need).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
KERNEL ?= gpulesson
# The site needs neither TensorFlow nor PyTorch: its own small environment (requirements/site.txt).
SITE_VENV ?= .venv-site
SITE_BIN  := $(SITE_VENV)/bin
# make lab TORCH=1 also installs PyTorch (requirements/torch.txt) for episode 8: on Linux the
# CPU-only build (setup.md), from PyTorch's index beside the usual one. Its versions end in
# "+cpu", which sort above PyPI's CUDA build of the same version, so pip takes them.
TORCH ?=
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_INDEX := $(if $(filter Linux,$(shell uname -s)),--extra-index-url $(TORCH_CPU_INDEX))
# Extra options for JupyterLab on your own machine, e.g. one without a browser (README.md); on
# a cluster, learners use the setup page's conda environment and kernel, not make lab:
#   make lab LAB_ARGS="--no-browser --port=8888"
LAB_ARGS ?=
# JupyterLab refuses to start as root without --allow-root; containers and some cluster nodes
# run everything as root, so the option is added there (and only there).
ROOT_ARGS := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)
# The learners' working copies of the notebooks: JupyterLab saves outputs into the notebooks
# it opens, so it opens these (ignored by git), never the tracked ones in notebooks/.
MY_NOTEBOOKS ?= my-notebooks
# make lab COMPLETE=1 also copies the complete notebooks (notebooks/, every cell filled in) there,
# as NN-slug-complete.ipynb: the fallback for a learner who falls behind the typing.
COMPLETE ?=
# Extra pytest arguments, e.g. make test PYTEST_ARGS="-k hdf5 -x"
PYTEST_ARGS ?=
# Test processes (pytest-xdist): two keep a 2-core machine busy while a test waits on Slurm, a
# browser or a subprocess; 0 runs every test in the one pytest process.
TEST_PROCESSES ?= 2
# Recording with a Python that already has the lesson's packages (a cluster's GPU node, where no
# environment can be built): make reference LESSON_PYTHON=python3 installs nothing and runs that
# Python; a package it lacks is named before anything runs (recording.md, "Recording on your cluster").
LESSON_PYTHON ?=
RUN   := $(or $(LESSON_PYTHON),$(BIN)/python)
READY := $(if $(LESSON_PYTHON),,$(BIN)/.installed)
# The reference run's stages (tools/reference.py --list): 'auto' is every stage on a machine
# without a GPU, and on a GPU node all but the CPU-only contention experiment. Each stage stops
# itself after STAGE_TIME_LIMIT seconds (0: never) and goes on where it stopped when run again.
STAGES ?= auto
STAGE_TIME_LIMIT ?= 480

.PHONY: help site test check-notebooks lint lab lab-venv venv kernel notebooks reference stage figures lock clean distclean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

# The full and the site's environments install their pinned packages with uv (pinned in
# requirements/installer.txt, from PyPI like the rest): the same versions as pip, several times
# faster (the full environment in 45 s against pip's 231 s on a 2-core machine). It compiles the
# bytecode as pip does: where PYTHONDONTWRITEBYTECODE is set, nothing compiles it later, and
# every import of TensorFlow would take 2 to 3 times as long. INSTALLER=pip uses pip alone, e.g.
# where only pip.conf names a package index or proxy. uv takes the system's certificates, as pip
# does. The learner's environment (make lab) always uses pip.
INSTALLER ?= uv
ifeq ($(INSTALLER),uv)
install = $(1)/python -m pip install --quiet -r requirements/installer.txt && \
	UV_SYSTEM_CERTS=1 $(1)/uv pip install --quiet --compile-bytecode --python $(1)/python $(2)
else
install = $(1)/python -m pip install --quiet $(2)
endif

# Only the files the full environment is installed from (not the site's, not a GPU node's wheels).
FULL_REQUIREMENTS := $(filter-out requirements/site.txt requirements/node.txt requirements/installer.txt,$(wildcard requirements/*.txt))

$(BIN)/.installed: $(FULL_REQUIREMENTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(call install,$(BIN),-r requirements/dev.txt -c requirements/constraints.txt)
	$(BIN)/python -m pip install --quiet --no-deps --editable .
	touch $@

# Jupyter Book and the site's extension only; the same versions as the full lock.
$(SITE_BIN)/.installed: requirements/site.txt requirements/constraints.txt
	test -x $(SITE_BIN)/python || $(PYTHON) -m venv $(SITE_VENV)
	$(SITE_BIN)/python -m pip install --quiet --upgrade pip
	$(call install,$(SITE_BIN),-r requirements/site.txt -c requirements/constraints.txt)
	$(SITE_BIN)/python -m pip install --quiet --no-deps --editable .
	touch $@

# Whether .venv is make test's full environment, installed after the files $(1) last changed:
# it then has all that make lab installs (PyTorch included), and nothing is installed again.
full_env_has = test -f $(BIN)/.installed && test -z "$$(find $(1) -newer $(BIN)/.installed)"
FULL_ENV_NOTE = echo "$(VENV) is make test's full environment: it has what make lab needs"

# The learner's environment (make lab, make kernel): requirements/lab.txt only, in the same .venv
# that make test completes.
$(BIN)/.installed-lab: requirements/lab.txt requirements/cpu.txt requirements/common.txt
	if $(call full_env_has,$^); then $(FULL_ENV_NOTE); else \
		{ test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); } && \
		$(BIN)/python -m pip install --quiet --upgrade pip && \
		$(BIN)/python -m pip install --quiet -r requirements/lab.txt -c requirements/constraints.txt && \
		$(BIN)/python -m pip install --quiet --no-deps --editable .; fi
	touch $@

# PyTorch for episode 8, only when asked for (make lab TORCH=1): the CPU-only build on Linux.
$(BIN)/.installed-torch: requirements/torch.txt $(BIN)/.installed-lab
	if $(call full_env_has,requirements/torch.txt); then $(FULL_ENV_NOTE); else \
		$(BIN)/python -m pip install --quiet -r requirements/torch.txt -c requirements/constraints.txt \
			$(TORCH_INDEX); fi
	touch $@

LAB_READY := $(BIN)/.installed-lab $(if $(TORCH),$(BIN)/.installed-torch)

venv: $(BIN)/.installed  ## create the full virtual environment only (what make test needs)

lab-venv: $(LAB_READY)  ## create the learner's environment only (what make lab needs; TORCH=1 adds PyTorch)

site: $(SITE_BIN)/.installed  ## build the lesson site into _build/html (small environment; no notebook is executed)
	$(SITE_BIN)/jupyter-book build . --builder html --warningiserror --keep-going
	@echo "Open _build/html/index.html in a browser, or serve it: python3 -m http.server -d _build/html"

# SYSTEM=no: install no system packages; the browser, Slurm and OOD tests then skip, saying why.
SYSTEM ?= yes
test: $(BIN)/.installed  ## run every test: site, episodes, notebooks (synthetic data, quick mode), helpers
ifneq ($(SYSTEM),no)
	tools/ensure_chromium.sh  # for the browser tests: installs Debian's Chromium if root, else says how
	tools/ensure_slurm.sh     # for the Slurm and OOD tests: installs Slurm, munge and Ruby if root, else says how
endif
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadscope $(PYTEST_ARGS)

# make check-notebooks NOTEBOOKS=notebooks/05-cpu-vs-gpu.ipynb checks one.
NOTEBOOKS ?= notebooks/
check-notebooks: $(BIN)/.installed  ## run the complete notebooks with nbval (quick, synthetic): a check of a new environment
	LESSON_DATA=$${LESSON_DATA:-synthetic} LESSON_QUICK=$${LESSON_QUICK:-1} $(BIN)/python -m pytest -p no:xdist -p no:cacheprovider $(NOTEBOOKS)

lint: $(BIN)/.installed  ## ruff, codespell, notebooks in sync with the episodes and clean (also part of make test)
	$(BIN)/ruff check
	$(BIN)/codespell
	$(BIN)/python tools/make_notebooks.py --check

notebooks: $(READY)  ## regenerate notebooks/*.ipynb, notebooks/learner/*.ipynb and gpulesson/lesson/ from the episodes
	$(RUN) tools/make_notebooks.py

# The data must be chosen: LESSON_DATA=synthetic make reference (or cifar10).
reference: $(READY)  ## record the reference run here in stages (CPU, and GPU if any), redraw, refill, pack
	$(RUN) tools/reference.py $(STAGES) --time-limit $(STAGE_TIME_LIMIT)

stage: $(READY)  ## one stage of the reference run, e.g. make stage STAGE=core (list: tools/reference.py --list)
	$(RUN) tools/reference.py $(STAGE) --time-limit $(STAGE_TIME_LIMIT)

# One job step of the budgeted reference run (tools/budget.py): what the run lacks, in order of
# value, stopped by BUDGET_DEADLINE seconds and packed into three files in BUDGET_OUT.
BUDGET_DEADLINE ?= 480
BUDGET_OUT ?= _build/reference/budget
.PHONY: budget
budget: $(READY)  ## the reference run by a deadline, packed: make budget BUDGET_DEADLINE=480 BUDGET_OUT=DIR
	$(RUN) tools/reference.py budget --deadline $(BUDGET_DEADLINE) --out $(BUDGET_OUT)

# The data must be chosen: LESSON_DATA=cifar10 make executed (or synthetic); RECORD_ARGS="--only 04".
.PHONY: executed
executed: $(READY)  ## run every notebook here, full size, and keep its outputs for the site in executed/
	$(RUN) tools/record_run.py $(RECORD_ARGS)

figures: $(READY)  ## redraw every figure: the schematics from fig/, the measured ones from results/
	$(RUN) tools/reference.py --figures

kernel: $(LAB_READY)  ## register this environment as the Jupyter kernel "$(KERNEL)"
	# TF_CPP_MIN_LOG_LEVEL=1: TensorFlow's INFO notes on stderr look like errors in a notebook.
	# No preallocation: JAX would take 75 % of the GPU's memory, TensorFlow all of it, at the
	# first GPU operation, and a second kernel or job on a shared GPU would then fail.
	$(BIN)/python -m ipykernel install --user --name $(KERNEL) --display-name "Python ($(KERNEL))" \
		--env TF_CPP_MIN_LOG_LEVEL 1 --env XLA_PYTHON_CLIENT_PREALLOCATE false \
		--env TF_FORCE_GPU_ALLOW_GROWTH true

lab: kernel  ## start JupyterLab on your copies of the notebooks (my-notebooks/; COMPLETE=1: the complete ones too)
	$(BIN)/python -m gpulesson.classroom.workcopy --to $(MY_NOTEBOOKS)
	$(if $(COMPLETE),$(BIN)/python -m gpulesson.classroom.workcopy --to $(MY_NOTEBOOKS) --complete)
	# The root stays the lesson folder: notebooks show figures from ../fig and link to ../setup.md.
	$(BIN)/jupyter lab --notebook-dir=. --LabApp.default_url=/lab/tree/$(MY_NOTEBOOKS) $(ROOT_ARGS) $(LAB_ARGS)

lock: $(BIN)/.installed  ## rewrite requirements/constraints.txt from the environment
	tools/lock.sh $(BIN)/python > requirements/constraints.txt

clean:  ## remove the built site
	rm -rf _build

distclean: clean  ## also remove the virtual environments
	rm -rf $(VENV) $(SITE_VENV)
