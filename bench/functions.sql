-- Measuring functions of the benchmarks (bench/run.sh, bench/groupby.sh).

-- Wall-clock milliseconds of one execution of a query, its rows discarded.
CREATE FUNCTION bench_ms(query text) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
    started timestamptz := clock_timestamp();
BEGIN
    EXECUTE query;
    RETURN extract(epoch FROM clock_timestamp() - started) * 1000;
END
$$;

-- This backend's peak resident set (VmHWM) in kB.
CREATE FUNCTION bench_peak_kb() RETURNS bigint LANGUAGE sql AS $$
    SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+) kB'))[1]::bigint
$$;

-- How long this backend has waited for a CPU (run queue time from /proc/self/schedstat), in
-- milliseconds: the share of a measurement that other processes on the machine took.
CREATE FUNCTION bench_cpu_wait_ms() RETURNS double precision LANGUAGE sql AS $$
    SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 2)::bigint / 1e6
$$;
