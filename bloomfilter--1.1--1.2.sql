-- bloomfilter 1.2: new filters are written in format version 2 (see README, "Byte format"),
-- by the shared library alone. No SQL object changes; filters stored before keep format
-- version 1 and keep working.
\echo Use "ALTER EXTENSION bloomfilter UPDATE TO '1.2'" to load this file. \quit
