# bloomfilter: a PostgreSQL extension, built with PGXS.
#   make demo   set up everything on a fresh Debian machine and run the article's scenario
#   make check  the short loop: build, unit tests and pg_regress on a throwaway cluster (< 2 min)
#   make deps   install the Debian packages the other targets use (test/bootstrap.sh)
#   make test   format check, unit tests, sanitizers, fuzz smoke, the pg_regress suite and the
#               Python client's tests on throwaway clusters, then the TAP tests (t/, prove); needs
#               `make deps` once
#   make bench  the README's headline benchmarks in a few minutes, printed as ratios measured side
#               by side; make bench-all every section

EXTENSION = bloomfilter
MODULE_big = bloomfilter
CORE_OBJS = src/core/bloom.o src/core/distinct.o
OBJS = $(CORE_OBJS) src/pg/glue.o src/pg/bloom_type.o src/pg/bloom_ops.o \
       src/pg/toast_slices.o src/pg/statement_cache.o src/pg/stored_lookup.o \
       src/pg/bloom_agg.o src/pg/agg_budget.o src/pg/agg_state.o src/pg/agg_spill.o src/pg/agg_serial.o src/pg/maintained.o \
       src/pg/index_am.o src/pg/index_pages.o src/pg/index_build.o src/pg/index_access.o src/pg/index_contains.o src/pg/index_read.o src/pg/index_citus.o src/pg/index_verify.o \
       src/pg/index_composite.o src/pg/index_hash.o src/pg/init.o
DATA = bloomfilter--1.0.control bloomfilter--1.0.sql bloomfilter--1.0--1.1.sql bloomfilter--1.1--1.2.sql \
       bloomfilter--1.2--1.3.sql bloomfilter--1.3--1.4.sql \
       bloomfilter--1.4--2.0.sql bloomfilter--2.0.sql bloomfilter--2.0--2.1.sql \
       bloomfilter--2.1--2.2.sql
REGRESS = million_emails types functions aggregates aggregate_nulls aggregate_memory aggregate_spill storage formats errors \
          maintained privileges security index index_build index_privileges index_partitions index_owner_code index_reader_code index_execute index_names index_growth index_composite layered_values signup signup_tenant
REGRESS_OPTS = --outputdir=$(CURDIR)/build/regress
# Isolation specs (specs/*.spec, expected/*.out): checks interleaved with concurrent DDL and
# inserts. `make installcheck` runs them after REGRESS.
ISOLATION = reindex_concurrently drop_index_concurrently attach_partition detach_partition \
            create_index_concurrently insert_during_check revoke_during_check growth_during_check \
            follow_during_growth
ISOLATION_OPTS = --load-extension=bloomfilter --outputdir=$(CURDIR)/build/isolation

PG_CONFIG ?= pg_config
# PG_CXXFLAGS_EXTRA: more flags for the extension's objects, e.g. -Werror (test/matrix.sh).
PG_CXXFLAGS = -std=c++17 -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
              -Wno-register $(PG_CXXFLAGS_EXTRA)  # PostgreSQL's headers use `register`, removed in C++17
# Compilers: CXX (PGXS sets it to the C++ compiler PostgreSQL was configured with) builds the
# extension, the unit tests and the helpers; CLANGXX the sanitized unit tests and the fuzzers
# (libFuzzer). Either can be given on the command line: make CXX=clang++ CLANGXX=clang++-16.
CLANGXX ?= clang++-14
SHLIB_LINK = -lstdc++
# No JIT bitcode: the functions are small calls, and it avoids needing a matching clang.
override with_llvm = no

EXTRA_CLEAN = build clients/python/build clients/python/bloomfilter/_native.*.so
# Where this Makefile is: the build may run in another directory (VPATH, as Debian's pg_buildext
# builds one directory per server version).
SOURCE_DIR := $(dir $(firstword $(MAKEFILE_LIST)))

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(filter check,$(MAKECMDGOALS)),)
# `make check` (below) runs everything through sub-makes: PGXS, whose own `check` only says that it
# is not supported, is not read here.
ifneq ($(filter-out check,$(MAKECMDGOALS)),)
$(error run `make check` alone)
endif
else ifeq ($(PGXS),)
# No server headers yet: only the targets that install them work.
all install installcheck:
	@echo "pg_config not found: run 'make deps' (or see README.md)" >&2; exit 1
else
include $(PGXS)
endif

ifdef VPATH
$(shell mkdir -p $(sort $(dir $(OBJS))))
endif

# Scripts earlier releases installed that a trusted install must no longer offer (1.3's full
# script let a database owner install 1.3): `make install` over an older install removes them; a
# package upgrade removes them itself.
RETIRED_DATA = bloomfilter--1.3.sql
.PHONY: remove-retired-data
install: remove-retired-data
remove-retired-data:
	rm -f $(addprefix '$(DESTDIR)$(datadir)/$(datamoduledir)/,$(addsuffix ',$(RETIRED_DATA)))

# pg_regress writes its results there but does not create it.
installcheck: | build/regress build/isolation
build/regress build/isolation:
	@mkdir -p $@

# PGXS tracks no header dependencies: every object depends on every header.
$(OBJS): $(wildcard src/core/*.hpp src/pg/*.hpp)

.PHONY: deps demo test deb dist meta-test unit-test regress-test regress-list tap-test python-test \
        node-test golden-vectors bench isolation-test check format-check format

deps:
	@test/bootstrap.sh

include $(SOURCE_DIR)test/fuzz/fuzz.mk

# The core's unit tests, plain and under AddressSanitizer + UndefinedBehaviorSanitizer.
# golden_test.cpp checks test/vectors/golden.json, which the Python client's tests read too.
UNIT_SOURCES = test/unit/core_test.cpp test/unit/golden_test.cpp src/core/bloom.cpp src/core/distinct.cpp
UNIT_DEPENDS = $(UNIT_SOURCES) src/core/bloom.hpp src/core/distinct.hpp src/core/hash_lanes.hpp test/vectors/golden.hpp test/vectors/golden.json
UNIT_DEFINES = -DBLOOMFILTER_SOURCE_DIR='"$(abspath $(SOURCE_DIR))"'
build/unit_test: $(UNIT_DEPENDS)
	@mkdir -p build
	$(CXX) -std=c++17 -O2 -Wall -Wextra $(UNIT_DEFINES) -o $@ $(UNIT_SOURCES) -lgtest -lgtest_main -pthread
build/unit_test_sanitized: $(UNIT_DEPENDS)
	@mkdir -p build
	$(CLANGXX) -std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -fno-omit-frame-pointer $(UNIT_DEFINES) -o $@ $(UNIT_SOURCES) -lgtest -lgtest_main -pthread

# Rewrites the golden vectors from the core: only after a deliberate change of the format.
build/golden_vectors: test/vectors/generate.cpp test/vectors/golden.hpp src/core/bloom.cpp src/core/bloom.hpp
	@mkdir -p build
	$(CXX) -std=c++17 -O2 -Wall -Wextra -o $@ test/vectors/generate.cpp src/core/bloom.cpp
golden-vectors: build/golden_vectors
	build/golden_vectors > test/vectors/golden.json

# The core's benchmark (bench/run.sh, section d): Google Benchmark, next to libbloom and the
# article's algorithm (OpenSSL's SHA-256 and MD5).
BENCH_SOURCES = bench/core_bench.cpp bench/article_algorithm.cpp src/core/bloom.cpp
build/core_bench: $(BENCH_SOURCES) bench/article_algorithm.hpp src/core/bloom.hpp
	@mkdir -p build
	$(CXX) -std=c++17 -O2 -Wall -Wextra -o $@ $(BENCH_SOURCES) -lbenchmark -lbloom -lcrypto -pthread

unit-test: build/unit_test build/unit_test_sanitized
	build/unit_test
	build/unit_test_sanitized

regress-test:
	test/run-regress.sh

# The isolation specs alone on a throwaway cluster (regress-test runs them too).
isolation-test:
	test/run-isolation.sh

# The short loop, under two minutes on two cores: build, install, the core's unit tests, and
# pg_regress on a throwaway cluster on a fresh install, with the isolation specs that ISOLATION
# lists. Not the files in CHECK_SKIP, which build 1M-row tables, nor the sanitized unit tests (a
# second compiler's build), the run on a schema updated from 1.0, fuzzing, TAP or the Python
# client: make test runs them all.
CHECK_SKIP = million_emails aggregate_memory
ifneq ($(filter check,$(MAKECMDGOALS)),)
check:
	$(MAKE) -j2 all build/unit_test
	test/install.sh
	build/unit_test --gtest_brief=1
	test/run-regress.sh --fresh-only $(filter-out $(CHECK_SKIP),$(REGRESS)) $(ISOLATION)
	@echo "make check: passed: build, unit tests," \
	  "pg_regress ($(words $(filter-out $(CHECK_SKIP),$(REGRESS))) files, not $(CHECK_SKIP))$(if $(ISOLATION), and $(words $(ISOLATION)) isolation specs)"
endif

# The suite's files, for the scripts that run it again (test/run-regress.sh, test/matrix.sh).
regress-list:
	@echo $(REGRESS)

# The Python client (clients/python) against a throwaway cluster and clusters of its own: needs
# the python3-* packages and gunicorn that test/bootstrap.sh installs for it.
python-test:
	test/run-python.sh

# The Node.js client (clients/node) against a throwaway cluster: needs nodejs and npm (npm ci
# installs the package's dependencies from package-lock.json).
node-test:
	test/run-node.sh

# The TAP tests in t/, on PostgreSQL's own framework (PostgreSQL::Test::Cluster), run with prove:
# WAL and standby, load, dump and restore, crash recovery, limits, concurrent signups, several
# nodes. Each starts its own clusters. TAP_TESTS="t/004_crash_recovery.pl ..." runs some of them;
# PROVE_FLAGS=-v shows what they print.
TAP_TESTS ?=
tap-test:
	test/run-tap.sh $(PROVE_FLAGS) $(TAP_TESTS)

# The pg_regress suite, the TAP tests and the isolation specs on an assert-enabled PostgreSQL 15,
# built once from Debian's source package into a cache directory (test/cassert.sh); fails on a
# failed assertion (TRAP:) in a server's log too. Installs its packages (test/bootstrap.sh cassert).
.PHONY: test-cassert
test-cassert:
	test/run-cassert.sh $(PROVE_FLAGS) $(TAP_TESTS)

# Citus (vendored in ../shared/vendor/, built once into a cache by test/citus.sh and installed
# into the server), then its TAP tests, which `make test` skips without it: t/015_citus.pl,
# t/018_citus_isolation.pl (every isolation level, every kind of Citus table) and
# t/020_citus_composite.pl (the same for a multicolumn index).
CITUS_TAP_TESTS = t/015_citus.pl t/018_citus_isolation.pl t/020_citus_composite.pl
.PHONY: test-citus
test-citus:
	@test/bootstrap.sh citus
	test/citus.sh
	test/run-tap.sh $(PROVE_FLAGS) $(CITUS_TAP_TESTS)
# The same tests, for test/matrix.sh's Citus step.
.PHONY: citus-tap-list
citus-tap-list:
	@echo $(CITUS_TAP_TESTS)

# Everything but the version matrix; prints what ran on its last line. No package is installed
# here: `make deps` does that.
test: all
	test/install.sh
	$(MAKE) meta-test
	$(MAKE) format-check
	$(MAKE) unit-test
	$(MAKE) fuzz-smoke
	$(MAKE) regress-test
	$(MAKE) python-test
	$(MAKE) node-test
	@mkdir -p build
	@{ test/run-tap.sh $(PROVE_FLAGS) 2>&1; echo $$? >build/tap.status; } | tee build/tap.log; exit $$(cat build/tap.status)
	@echo "make test: passed: META.json, format, unit tests (plain and sanitized), fuzz smoke ($(words $(FUZZ_TARGETS)) targets)," \
	  "pg_regress ($(words $(REGRESS)) files, fresh and upgraded from 1.0)," \
	  "isolation ($(words $(ISOLATION)) specs), Python client, Node.js client," \
	  "TAP: $$(sed -n 's/^\(Files=[0-9]*, Tests=[0-9]*\),.*/\1/p' build/tap.log)"

# The C and C++ sources (the Python client's compiled check too) against .clang-format, with clang-format-14 (test/bootstrap.sh installs
# it); `make format` rewrites them.
CLANG_FORMAT ?= clang-format-14
FORMAT_FILES = $(wildcard $(addprefix $(SOURCE_DIR),src/core/*.[ch]pp src/pg/*.[ch]pp \
                 test/*/*.[ch]pp bench/*.[ch]pp clients/python/src/*.[ch]pp))
format-check:
	$(CLANG_FORMAT) --style=file --dry-run --Werror $(FORMAT_FILES)
format:
	$(CLANG_FORMAT) --style=file -i $(FORMAT_FILES)

# META.json against the PGXN meta spec and the project's version, the checker's own self-test, and
# the links between the Markdown documents.
meta-test:
	python3 $(SOURCE_DIR)test/meta/check_meta.py $(SOURCE_DIR)META.json
	python3 $(SOURCE_DIR)test/meta/check_meta.py --self-test $(SOURCE_DIR)META.json
	python3 $(SOURCE_DIR)test/docs/check_links.py

# The PGXN release archive, build/bloomfilter-<version>.zip, of the committed tree (git archive).
DIST_VERSION = $(shell python3 -c 'import json; print(json.load(open("$(SOURCE_DIR)META.json"))["version"])')
dist: meta-test
	@git diff --quiet HEAD || echo "make dist: uncommitted changes are not in the archive" >&2
	@mkdir -p build
	git archive --format=zip --prefix=bloomfilter-$(DIST_VERSION)/ -o build/bloomfilter-$(DIST_VERSION).zip HEAD
	@echo "built build/bloomfilter-$(DIST_VERSION).zip"

# Debian packages (debian/, dh --with pgxs) for every installed server version, into build/deb/.
deb:
	@test/bootstrap.sh deb
	test/deb.sh

demo: deps
	$(MAKE) all
	test/install.sh
	test/demo.sh

bench: deps
	$(MAKE) all
	test/install.sh
	bench/run.sh

# Every section of the benchmarks (bench/run.sh; `make bench` runs the headline ones): half an
# hour or more on two cores. BENCH_SECTIONS="a d" make bench runs some.
.PHONY: bench-all
bench-all: deps
	$(MAKE) all
	test/install.sh
	BENCH_SECTIONS=all bench/run.sh
include $(SOURCE_DIR)test/matrix.mk
