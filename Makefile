# The two commands of the README: `make run` (set up, quick study, report) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
RESULTS ?= fabricbench-results
NP     ?= 2
# The MPI: empty for the one on PATH; MPI=mpich or MPI=openmpi builds the native parts against that
# MPI's own compiler wrapper (mpicc.mpich, ...; MPICC=/path/to/mpicc for another install of it) into
# $(VENV)/native/$(MPI) and runs everything with its launcher (FABRICBENCH_MPI). The alternatives stay.
MPI    ?=
MPICC  ?=
# make test runs the MPI-dependent tests of tests/conftest.py's BOTH_MPIS again under this MPI.
SECOND_MPI ?= mpich
ifneq ($(MPI),)
export FABRICBENCH_MPI := $(MPI)
endif
# The default database (FABRICBENCH_DB, else the user data directory): the one plain `fabricbench` reads.
FB      = $(VENV)/bin/fabricbench

.PHONY: run test test-second-mpi docs setup system-deps test-deps install native dev clean

run: setup
	@mkdir -p $(RESULTS)
	$(FB) run quick --np $(NP) --label quick-local --tag fabric=shm
	$(FB) show last
	$(FB) report last -o $(RESULTS)/quick-report.html
	@echo "report: $(RESULTS)/quick-report.html"
	@echo "results database: $$($(FB) db path)"
	@echo "to run fabricbench and fabricbench-mpi from your shell: . $(VENV)/bin/activate"

# Tests run in two parts: those not marked `serial` on TEST_WORKERS pytest-xdist workers, a file per
# worker (labs and Slurm included: each worker has its own lab name and subnet), then the serial ones
# (PostgreSQL's fixed port, host-wide checks; tests/conftest.py) in one process.
# TEST_WORKERS=0 runs every test in one process. Exit status 5 of a part is "no test selected".
TEST_WORKERS ?= 2
PYTEST = $(VENV)/bin/python -m pytest -ra
define run_tests
	@if [ "$(TEST_WORKERS)" = 0 ]; then $(PYTEST) --durations=$(2) $(if $(1),-m "$(1)"); else \
	  a=0; $(PYTEST) --durations=$(2) -n $(TEST_WORKERS) --dist loadfile -m "$(if $(1),$(1) and )not serial" || a=$$?; \
	  b=0; $(PYTEST) --durations=$(2) -m "$(if $(1),$(1) and )serial" || b=$$?; \
	  [ $$a -eq 0 -o $$a -eq 5 ] && [ $$b -eq 0 -o $$b -eq 5 ]; fi
endef

# Every test under the chosen MPI; with the default MPI, the MPI-dependent tests once more under $(SECOND_MPI).
test: setup test-deps docs
	$(call run_tests,,25)
	@if [ -z "$(MPI)" ] && [ -n "$(SECOND_MPI)" ]; then $(MAKE) --no-print-directory test-second-mpi; fi

# The MPI-dependent tests marked both_mpis (tests/conftest.py) under $(SECOND_MPI); the pure tests ran once already.
# In one process: MPICH's ranks spin while they wait, and two jobs at once on two cores time-slice each
# other's ping-pongs into milliseconds (a 0 B latency median of 6 ms beside the other worker).
test-second-mpi:
	@if bash scripts/build-native.sh $(VENV) $(SECOND_MPI); then \
	  $(MAKE) --no-print-directory test-marked MARKED=both_mpis FABRICBENCH_MPI=$(SECOND_MPI) TEST_WORKERS=0; \
	else echo "make test: $(SECOND_MPI) is not installed; its second pass is skipped"; fi

test-marked:
	$(call run_tests,$(MARKED),15)

# The documentation site (docs/, mkdocs.yml) in strict mode: a broken link or a missing page fails.
docs: setup
	$(VENV)/bin/python -m mkdocs build --strict --site-dir build/site

setup: system-deps install $(if $(MPI),native)

system-deps:
	@MPI=$(MPI) bash scripts/install-system-deps.sh

# Packages only tests need (the simulated InfiniBand fabric, xrootd, NetPIPE, the catalogued
# applications, Slurm, and MPICH for the second MPI); `make run` goes without them.
test-deps:
	@bash scripts/install-test-deps.sh fabric transfer netpipe apps slurm $(filter mpich,$(SECOND_MPI) $(MPI))

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Rebuilt from the source tree every time: the engine and profiler are compiled against the MPI on PATH.
install: $(VENV)/bin/python
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check ".[test,pandas,postgres]"

# The native parts for $(MPI) in $(VENV)/native/$(MPI), used under FABRICBENCH_MPI=$(MPI).
native: $(VENV)/bin/python
	@test -n "$(MPI)" || { echo "make native: say which MPI: make native MPI=mpich (or MPI=openmpi)"; exit 2; }
	@bash scripts/build-native.sh $(VENV) $(MPI) $(MPICC)

# A developer build of the native parts at build/stage; use with FABRICBENCH_NATIVE_DIR=$(PWD)/build/stage.
dev: $(VENV)/bin/python
	cmake -S . -B build/dev -G Ninja && cmake --build build/dev && cmake --install build/dev --prefix build/stage

clean:
	rm -rf build dist $(VENV) $(RESULTS) *.egg-info
