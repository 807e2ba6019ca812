# desync: the two commands a user needs.
#   make demo   installs what is missing, builds, runs sync / async / racy Jacobi on 2 ranks
#   make test   installs what is missing, builds with Open MPI and with MPICH, runs both suites, then
#               the Python companion's tests (python/, in a virtual environment build/venv)
# Other targets: build, build-mpich, build-sim, python, python-mpich, python-tools, reproduce-quick, reproduce, bench, bench-sim,
# bench-figures, bench-petsc,
# bench-petsc-schwarz, bench-petsc-matrix, sanitize, tsan, install PREFIX=..., clean.
# The Makefile builds for this machine's CPU (-DDESYNC_NATIVE=ON); for a cluster, configure with
# CMake directly on (or for) the compute nodes.
JOBS    ?= 2
PREFIX  ?= /usr/local
OMPI    := build/openmpi
MPICH   := build/mpich
SMPI    := build/smpi
VENV    := build/venv
VENV_MPICH := build/venv-mpich
CMAKE_FLAGS ?=

# Open MPI refuses to run as root without these; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1
# When a rank exits non-zero (bad input), mpirun kills the job at once instead of waiting 1 s
# between SIGTERM and SIGKILL (about 2 s a run; the tests check many bad inputs).
export OMPI_MCA_odls_base_sigkill_timeout := 0

.PHONY: all deps build build-mpich build-sim bench-sim reproduce-quick reproduce demo test test-openmpi test-mpich test-python python python-mpich python-tools bench bench-figures bench-petsc bench-petsc-schwarz bench-petsc-matrix sanitize tsan install clean

all: build

deps:
	@bash scripts/install-deps.sh

$(OMPI)/CMakeCache.txt:
	cmake -S . -B $(OMPI) -DDESYNC_MPI=openmpi -DCMAKE_BUILD_TYPE=Release -DDESYNC_NATIVE=ON $(CMAKE_FLAGS)
$(MPICH)/CMakeCache.txt:
	cmake -S . -B $(MPICH) -DDESYNC_MPI=mpich -DCMAKE_BUILD_TYPE=Release -DDESYNC_NATIVE=ON $(CMAKE_FLAGS)
$(SMPI)/CMakeCache.txt:
	cmake -S . -B $(SMPI) -DDESYNC_MPI=smpi -DCMAKE_BUILD_TYPE=Release -DDESYNC_NATIVE=ON $(CMAKE_FLAGS)

build: deps $(OMPI)/CMakeCache.txt
	cmake --build $(OMPI) -j $(JOBS)

build-mpich: deps $(MPICH)/CMakeCache.txt
	cmake --build $(MPICH) -j $(JOBS)

# desync for SimGrid's SMPI: the same code on a simulated cluster, launched by desync-sim
# (docs/simulation.md).
build-sim: deps $(SMPI)/CMakeCache.txt
	cmake --build $(SMPI) -j $(JOBS) --target desync_cli

# The demo builds only what it runs: the desync executable, no test suite.
demo: deps $(OMPI)/CMakeCache.txt
	cmake --build $(OMPI) -j $(JOBS) --target desync_cli
	@echo "== synchronous Jacobi, 2 ranks, 50^3 cells per rank (the default problem of Bethune et al., 2011)"
	mpirun -np 2 $(OMPI)/desync jacobi --mode sync --local 50
	@echo "== asynchronous Jacobi, same problem, with synchronous polish of the final answer"
	mpirun -np 2 $(OMPI)/desync jacobi --mode async --local 50 --polish
	@echo "== racy Jacobi with rank 1 running at half speed (Bethune et al., 2011, section 6.1)"
	mpirun -np 2 $(OMPI)/desync jacobi --mode racy --local 50 --polish --slow-rank 1 --slow-factor 2

test-openmpi: build
	cd $(OMPI) && ctest --output-on-failure -j 1

test-mpich: build-mpich
	cd $(MPICH) && ctest --output-on-failure -j 1

# desync-plot, desync-run, desync-sim and desync-results (python/) in a virtual environment, from
# PyPI's numpy and matplotlib, without the extension module (-Cwheel.cmake=false: no C++ build).
python-tools: deps
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check --config-settings=wheel.cmake=false "./python[test]"

# The whole Python package, `import desync` included (docs/python.md), for each MPI: its extension
# links the libraries of build/openmpi into build/venv (mpi4py's wheel, which finds Open MPI) and of
# build/mpich into build/venv-mpich (mpi4py compiled for MPICH; -O0: it only has to run the tests).
PIP_EXT := pip install -q --disable-pip-version-check --no-build-isolation
python: build
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check scikit-build-core nanobind
	$(VENV)/bin/$(PIP_EXT) --config-settings=cmake.define.DESYNC_BUILD_DIR=$(CURDIR)/$(OMPI) --config-settings=build-dir=$(CURDIR)/build/python-openmpi "./python[test]"

python-mpich: build-mpich
	@test -x $(VENV_MPICH)/bin/python || python3 -m venv $(VENV_MPICH)
	$(VENV_MPICH)/bin/python -c "from mpi4py import MPI; assert 'MPICH' in MPI.Get_library_version()" 2>/dev/null || \
	    MPICC=mpicc.mpich CFLAGS=-O0 $(VENV_MPICH)/bin/pip install -q --disable-pip-version-check --force-reinstall \
	        --no-binary=mpi4py mpi4py
	$(VENV_MPICH)/bin/pip install -q --disable-pip-version-check scikit-build-core nanobind
	$(VENV_MPICH)/bin/$(PIP_EXT) --config-settings=cmake.define.DESYNC_BUILD_DIR=$(CURDIR)/$(MPICH) --config-settings=build-dir=$(CURDIR)/build/python-mpich "./python[test]"

# pytest on records made by the Open MPI build's desync in the test run and on simulated runs of the
# SMPI build; then `import desync` under mpirun (python/tests_mpi/run_mpi_tests.py): at 1, 2 and 3
# ranks under Open MPI; under MPICH at 1 and 2, and the 3-rank cases (a sub-communicator, errors)
# at 3 (MPICH's oversubscribed ranks spin). Where Debian's python3-petsc4py is installed, its test
# runs with the system Python too (build/venv-petsc; skipped, saying why, elsewhere).
test-python: build build-sim python python-mpich
	DESYNC=$(CURDIR)/$(OMPI)/desync DESYNC_SMPI=$(CURDIR)/$(SMPI)/desync MPIRUN=mpirun timeout 900 \
	    $(VENV)/bin/python -m pytest -q python/tests
	timeout 600 $(VENV)/bin/python python/tests_mpi/run_mpi_tests.py --desync $(OMPI)/desync \
	    --python $(VENV)/bin/python --mpirun mpirun.openmpi --ranks 1,2,3
	timeout 600 $(VENV_MPICH)/bin/python python/tests_mpi/run_mpi_tests.py --desync $(MPICH)/desync \
	    --python $(VENV_MPICH)/bin/python --mpirun mpirun.mpich --ranks 1,2
	timeout 300 $(VENV_MPICH)/bin/python python/tests_mpi/run_mpi_tests.py --desync $(MPICH)/desync \
	    --python $(VENV_MPICH)/bin/python --mpirun mpirun.mpich --ranks 3 --no-references -- -k "sub_communicator or error"
	@if /usr/bin/python3 -c "import petsc4py" 2>/dev/null; then \
	    test -x build/venv-petsc/bin/python || /usr/bin/python3 -m venv --system-site-packages build/venv-petsc; \
	    build/venv-petsc/bin/pip install -q --disable-pip-version-check scikit-build-core nanobind pytest mpi4py && \
	    build/venv-petsc/bin/$(PIP_EXT) --no-deps --config-settings=cmake.define.DESYNC_BUILD_DIR=$(CURDIR)/$(OMPI) \
	        --config-settings=build-dir=$(CURDIR)/build/python-petsc ./python && \
	    timeout 300 build/venv-petsc/bin/python python/tests_mpi/run_mpi_tests.py --desync $(OMPI)/desync \
	        --python build/venv-petsc/bin/python --mpirun mpirun.openmpi --ranks 1,2 --no-references -- -k petsc4py; \
	else echo "test-python: Debian's python3-petsc4py is not installed: the petsc4py test was skipped"; fi

test: test-openmpi test-mpich test-python

bench: deps build-sim
	cmake -S . -B build/bench -DDESYNC_MPI=openmpi -DDESYNC_NATIVE=ON -DDESYNC_BUILD_TESTS=OFF
	cmake --build build/bench -j $(JOBS)
	bash bench/run_all.sh build/bench
	python3 bench/simgrid/calibrate.py --desync build/bench/desync -o build/sim/costs.json
	python3 bench/simgrid/reproduce.py --costs build/sim/costs.json --set quick --json build/sim/quick.json

# The results pages (docs/results/, docs/benchmarks.md): every real-run experiment of bench/results/*.toml
# again on this machine (under 20 minutes on 2 cores), its data in build/reproduce-quick/data/ and the
# pages rendered from it in build/reproduce-quick/pages/ (compare them with docs/: diff -r), figures and
# summary.txt beside them. `make reproduce` adds the simulated studies (desync's SMPI build, about an
# hour more on 2 cores) into build/reproduce/.
reproduce-quick: deps python-tools
	cmake -S . -B build/bench -DDESYNC_MPI=openmpi -DDESYNC_NATIVE=ON -DDESYNC_BUILD_TESTS=OFF
	cmake --build build/bench -j $(JOBS)
	rm -rf build/reproduce-quick
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/python -m desync_tools.results run --set quick \
	    --desync build/bench/desync --out build/reproduce-quick

reproduce: deps build-sim python-tools
	cmake -S . -B build/bench -DDESYNC_MPI=openmpi -DDESYNC_NATIVE=ON -DDESYNC_BUILD_TESTS=OFF
	cmake --build build/bench -j $(JOBS)
	rm -rf build/reproduce
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/python -m desync_tools.results run --set all \
	    --desync build/bench/desync --sim-desync $(SMPI)/desync --out build/reproduce

# The whole reproduction set at 16-1024 simulated ranks (docs/results/; about an hour here, two
# simulations at a time).
bench-sim: deps build build-sim
	@# calibrate.py measures the host's link into build/sim/host.json first; validate.py uses it.
	python3 bench/simgrid/calibrate.py --desync $(OMPI)/desync -o build/sim/costs.json
	@# validate.py exits 1 when a case misses the criteria (the 4-rank cases do on a 2-core host,
	@# docs/results/simulated-cluster.md); its table is the result, and the reproduction set runs after it anyway.
	-python3 bench/simgrid/validate.py --desync $(OMPI)/desync --costs build/sim/costs.json \
	    --host-calibration build/sim/host.json --json build/sim/validate.json
	python3 bench/simgrid/reproduce.py --costs build/sim/costs.json --set full --jobs $(JOBS) --json build/sim/full.json

# The figures of docs/benchmarks.md: runs bench/experiments/*.toml with desync-run and draws them
# with desync-plot into docs/figures/ (bench/figures.sh says which figure comes from which command).
bench-figures: deps python-tools
	cmake -S . -B build/bench -DDESYNC_MPI=openmpi -DDESYNC_NATIVE=ON -DDESYNC_BUILD_TESTS=OFF
	cmake --build build/bench -j $(JOBS)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH bash bench/figures.sh build/bench

# $(call petsc_build,TARGET,PROGRAM): the peer comparisons' first steps. Installs petsc-dev when
# missing, builds build/bench, and stops with TARGET's message unless build/bench/PROGRAM was built.
define petsc_build
	@bash scripts/install-deps.sh --petsc
	cmake -S . -B build/bench -DDESYNC_MPI=openmpi -DDESYNC_NATIVE=ON -DDESYNC_BUILD_TESTS=OFF
	cmake --build build/bench -j $(JOBS)
	@test -x build/bench/$(2) || { echo "$(1): build/bench/$(2) was not built (see the cmake output)"; exit 1; }
endef

# $(call petsc_compare,SCRIPT,PROGRAM,ARGS): runs bench/SCRIPT.py against build/bench/PROGRAM, writing
# build/bench/bench-results/SCRIPT.json and .txt, prints the text, and exits with the script's status.
define petsc_compare
	mkdir -p build/bench/bench-results
	python3 bench/$(1).py --desync build/bench/desync --petsc build/bench/$(2) \
	    --mpirun /usr/bin/mpirun.openmpi --json build/bench/bench-results/$(1).json $(3) \
	    > build/bench/bench-results/$(1).txt; status=$$?; cat build/bench/bench-results/$(1).txt; exit $$status
endef

# Optional, not part of deps/test: desync's CG family side by side with PETSc's (docs/benchmarks.md).
# Installs petsc-dev when missing. CG_COMPARE_ARGS: further bench/cg_compare.py arguments, e.g. --reps 5.
CG_COMPARE_ARGS ?=
bench-petsc:
	$(call petsc_build,bench-petsc,petsc_poisson3d)
	$(call petsc_compare,cg_compare,petsc_poisson3d,$(CG_COMPARE_ARGS))

# Optional, as bench-petsc: desync schwarz side by side with PETSc's additive Schwarz (docs/benchmarks.md,
# "Optimized Schwarz side by side with PETSc"). SCHWARZ_COMPARE_ARGS: further bench/schwarz_compare.py
# arguments, e.g. --reps 9 or --global 128,256,512.
SCHWARZ_COMPARE_ARGS ?=
bench-petsc-schwarz:
	$(call petsc_build,bench-petsc-schwarz,petsc_poisson2d_asm)
	$(call petsc_compare,schwarz_compare,petsc_poisson2d_asm,$(SCHWARZ_COMPARE_ARGS))

# Optional, as bench-petsc: desync jacobi|schwarz|krylov --matrix side by side with PETSc's PCASM and
# PCGAMG (bench/petsc/petsc_matrix_asm.c) on the matrices of bench/make_matrices.py (NumPy and SciPy, in
# the project venv with the extra `matrices`). MATRIX_SIZE: small | medium (default) | large;
# MATRIX_COMPARE_ARGS: further bench/matrix_compare.py arguments, e.g. --reps 1 --ranks 2 --only poisson2d.
MATRIX_SIZE ?= medium
MATRIX_COMPARE_ARGS ?=
bench-petsc-matrix: python-tools
	$(call petsc_build,bench-petsc-matrix,petsc_matrix_asm)
	$(VENV)/bin/pip install -q --disable-pip-version-check ./python[matrices]
	$(VENV)/bin/python bench/make_matrices.py --size $(MATRIX_SIZE) --out build/bench/matrices-$(MATRIX_SIZE) \
	    --desync build/bench/desync
	mkdir -p build/bench/bench-results
	python3 bench/matrix_compare.py --desync build/bench/desync --petsc build/bench/petsc_matrix_asm \
	    --mpirun /usr/bin/mpirun.openmpi --matrices build/bench/matrices-$(MATRIX_SIZE) \
	    --json build/bench/bench-results/matrix_compare.json $(MATRIX_COMPARE_ARGS) \
	    > build/bench/bench-results/matrix_compare.txt; status=$$?; cat build/bench/bench-results/matrix_compare.txt; exit $$status

sanitize: deps
	cmake -S . -B build/asan -DDESYNC_MPI=openmpi -DCMAKE_BUILD_TYPE=Debug -DDESYNC_SANITIZE="address;undefined"
	cmake --build build/asan -j $(JOBS)
	cd build/asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j 1

# ThreadSanitizer on the OpenMP solvers (one rank, so MPI's own threads stay out of the picture).
# GCC's libgomp is not instrumented for ThreadSanitizer (its barriers and locks look like races),
# so this builds with clang and LLVM's OpenMP runtime, whose archer tool (OMP_TOOL_LIBRARIES) tells
# ThreadSanitizer about OpenMP's synchronisation. tests/tsan.supp says what is suppressed and why
# (only the OpenMP runtime's and archer's own calls; no MPI suppression is needed at one rank).
TSAN_ARCHER ?= /usr/lib/llvm-14/lib/libarcher.so
tsan:
	@bash scripts/install-deps.sh tsan
	CC=clang-14 CXX=clang++-14 cmake -S . -B build/tsan -DDESYNC_MPI=openmpi -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DDESYNC_SANITIZE=thread -DDESYNC_BUILD_BENCH=OFF
	cmake --build build/tsan -j $(JOBS) --target test_omp_jacobi
	cd build/tsan && OMP_TOOL_LIBRARIES=$(TSAN_ARCHER) OMP_WAIT_POLICY=passive \
	  TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp history_size=4" \
	  ctest -R '^test_omp_jacobi_np1$$' --output-on-failure

install: build
	cmake --install $(OMPI) --prefix $(PREFIX)

clean:
	rm -rf build
