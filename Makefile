# The two commands of the README: `make run` (set up, quick study, report) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
RESULTS ?= fabricbench-results
NP     ?= 2
# The default database (FABRICBENCH_DB, else the user data directory): the one plain `fabricbench` reads.
FB      = $(VENV)/bin/fabricbench

.PHONY: run test setup system-deps test-deps install dev clean

run: setup
	@mkdir -p $(RESULTS)
	$(FB) run quick --np $(NP) --label quick-local --tag fabric=shm
	$(FB) show last
	$(FB) report last -o $(RESULTS)/quick-report.html
	@echo "report: $(RESULTS)/quick-report.html"
	@echo "results database: $$($(FB) db path)"
	@echo "to run fabricbench and fabricbench-mpi from your shell: . $(VENV)/bin/activate"

test: setup test-deps
	$(VENV)/bin/python -m pytest -ra

setup: system-deps install

system-deps:
	@bash scripts/install-system-deps.sh

# Packages only tests need (the simulated InfiniBand fabric, xrootd, NetPIPE, the catalogued
# applications, Slurm); `make run` goes without them.
test-deps:
	@bash scripts/install-test-deps.sh fabric transfer netpipe apps slurm

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Rebuilt from the source tree every time: the engine and profiler are compiled against the MPI on PATH.
install: $(VENV)/bin/python
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check ".[test,pandas,postgres]"

# A developer build of the native parts at build/stage; use with FABRICBENCH_NATIVE_DIR=$(PWD)/build/stage.
dev: $(VENV)/bin/python
	cmake -S . -B build/dev -G Ninja && cmake --build build/dev && cmake --install build/dev --prefix build/stage

clean:
	rm -rf build dist $(VENV) $(RESULTS) *.egg-info
