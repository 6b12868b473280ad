-- Instruments of the multinode test on the coordinator: the bytes this backend has received from
-- the data nodes (the kernel's count for its TCP connections to them, read with ss), and the time,
-- bytes and result of one statement.
CREATE FUNCTION bytes_from_nodes() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  ports text;
BEGIN
  SELECT string_agg('dport = :' || o.option_value, ' or ') INTO ports
  FROM pg_foreign_server s, pg_options_to_table(s.srvoptions) o
  WHERE s.srvname IN ('node1', 'node2') AND o.option_name = 'port';
  IF pg_catalog.to_regclass('pg_temp.received') IS NULL THEN
    CREATE TEMP TABLE received (bytes bigint);
  END IF;
  TRUNCATE received;
  EXECUTE format('COPY received FROM PROGRAM %L',
    format('ss -tinpH state established %L | awk -v pid=%s %L', '( ' || ports || ' )', pg_backend_pid(),
           '/pid=/ { mine = index($0, "pid=" pid ",") > 0 } '
           '/bytes_received:/ && mine { match($0, /bytes_received:[0-9]+/); print substr($0, RSTART + 15, RLENGTH - 15) }'));
  RETURN (SELECT coalesce(sum(bytes), 0) FROM received);
END $$;

CREATE FUNCTION measure(query text, OUT ms float8, OUT bytes bigint, OUT result text)
LANGUAGE plpgsql AS $$
DECLARE
  started timestamptz;
  received_before bigint;
BEGIN
  received_before := bytes_from_nodes();
  started := clock_timestamp();
  EXECUTE query INTO result;
  ms := extract(epoch FROM clock_timestamp() - started) * 1000;
  bytes := bytes_from_nodes() - received_before;
END $$;
