# libFuzzer targets for the core (src/core), included by the top-level Makefile (which sets
# CLANGXX, the compiler with libFuzzer; FUZZ_CXX overrides it here); paths are relative to the
# repository root.
#   make fuzz         build each target into build/fuzz/ and run it for FUZZ_SECONDS (60)
#   make fuzz-smoke   the same, FUZZ_SMOKE_SECONDS (30) each; part of `make test`
#   make fuzz-corpus  regenerate the committed seed corpus in test/fuzz/corpus/
#   make fuzz-sqlsmith  random SQL from sqlsmith (SQLSMITH_SECONDS, 60) against a throwaway
#                     cluster holding bloom values and bloomfilter indexes, installed extension;
#                     fails on a crashed server process or an index missing a row
#                     (test/fuzz/sqlsmith.sh). Part of make fuzz.
# Each run starts from test/fuzz/corpus/<target> and keeps what it finds in
# build/fuzz/corpus/<target>. A crash, sanitizer report, leak or timeout fails the target; the
# input is saved as build/fuzz/<target>-crash-* and the log as build/fuzz/<target>.log.

# Including this file must not change the including Makefile's default goal.
fuzz_saved_default_goal := $(.DEFAULT_GOAL)

FUZZ_TARGETS = fuzz_validate fuzz_hex
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 30
FUZZ_CXX ?= $(CLANGXX)
FUZZ_CXXFLAGS ?= -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                 -fno-omit-frame-pointer
FUZZ_BINARIES = $(addprefix build/fuzz/,$(FUZZ_TARGETS))
FUZZ_CORE = src/core/bloom.cpp src/core/bloom.hpp

$(FUZZ_BINARIES): build/fuzz/%: test/fuzz/%.cpp test/fuzz/fuzz_common.hpp $(FUZZ_CORE)
	@mkdir -p build/fuzz
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -o $@ $< src/core/bloom.cpp

build/fuzz/make_corpus: test/fuzz/make_corpus.cpp $(FUZZ_CORE)
	@mkdir -p build/fuzz
	$(CXX) -std=c++17 -O2 -Wall -Wextra -o $@ $< src/core/bloom.cpp

# libFuzzer's closing lines worth keeping: runs done, executions, speed, corpus growth, memory.
fuzz_stats_lines = ^(Done [0-9]+ runs|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb):)

# $(1): seconds per target. Runs every target, shows libFuzzer's final figures (runs done,
# executions per second, corpus growth), and fails at the end if any run failed.
fuzz_run = status=0; \
  for target in $(FUZZ_TARGETS); do \
    mkdir -p build/fuzz/corpus/$$target; \
    echo "$$target: fuzzing for $(1) s"; \
    if build/fuzz/$$target -max_total_time=$(1) -timeout=10 -print_final_stats=1 \
         -artifact_prefix=build/fuzz/$$target- \
         build/fuzz/corpus/$$target test/fuzz/corpus/$$target > build/fuzz/$$target.log 2>&1; then \
      grep -E '$(fuzz_stats_lines)' build/fuzz/$$target.log | sed "s/^/$$target: /"; \
    else \
      tail -n 60 build/fuzz/$$target.log; \
      echo "$$target: FAILED (log: build/fuzz/$$target.log, input: build/fuzz/$$target-*)" >&2; \
      status=1; \
    fi; \
  done; \
  exit $$status

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-corpus fuzz-sqlsmith

fuzz-build: $(FUZZ_BINARIES)

fuzz: $(FUZZ_BINARIES)
	@$(call fuzz_run,$(FUZZ_SECONDS))
	@$(MAKE) --no-print-directory fuzz-sqlsmith

fuzz-sqlsmith:
	@PG_CONFIG="$(PG_CONFIG)" test/fuzz/sqlsmith.sh

fuzz-smoke: $(FUZZ_BINARIES)
	@$(call fuzz_run,$(FUZZ_SMOKE_SECONDS))

fuzz-corpus: build/fuzz/make_corpus
	rm -rf test/fuzz/corpus
	mkdir -p $(addprefix test/fuzz/corpus/,$(FUZZ_TARGETS))
	build/fuzz/make_corpus test/fuzz/corpus

.DEFAULT_GOAL := $(fuzz_saved_default_goal)
