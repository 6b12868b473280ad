# make test-matrix: build and run the pg_regress suite against PostgreSQL 15 (this machine), 17
# (Debian trixie root) and 18 (Debian sid root), then check that filters written by each version
# read back identically on the others. Needs root; see test/matrix.sh.
#   make test-matrix MATRIX_VERSIONS="15 18"   only some of them
MATRIX_VERSIONS ?=

.PHONY: test-matrix
test-matrix:
	test/matrix.sh $(MATRIX_VERSIONS)
