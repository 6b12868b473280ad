// bloom_index_shards: where the rows of a Citus table's bloomfilter index are. Citus creates the
// index on each shard of the table (named by shard_name()), on the nodes that hold the shard's
// placements; the coordinator's index is the shell table's and holds nothing. A reader of the
// index (a follower) reads the shards' indexes on their nodes, and a key is present when one of
// them says so.
#include "index_access.hpp"

extern "C" {
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/regproc.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_shards);
}

namespace {

// Citus's own catalogs and shard_name(), all qualified; the index and its table as parameters.
// The active placements of each shard (shardstate 1), in order.
const char *const kShardsQuery =
    "SELECT s.shardid, pg_catalog.shard_name($1, s.shardid), n.nodename, n.nodeport "
    "FROM pg_catalog.pg_dist_shard s "
    "JOIN pg_catalog.pg_dist_placement p ON p.shardid OPERATOR(pg_catalog.=) s.shardid "
    "JOIN pg_catalog.pg_dist_node n ON n.groupid OPERATOR(pg_catalog.=) p.groupid "
    "WHERE s.logicalrelid OPERATOR(pg_catalog.=) $2 "
    "AND p.shardstate OPERATOR(pg_catalog.=) 1 "
    "ORDER BY s.shardid, n.nodename, n.nodeport";

}  // namespace

// bloom_index_shards(index): for a Citus table's index, a row for each placement of each shard:
// the shard's id, the name of its index on the node (shard_name()), the node's host and port.
// The caller needs what reading the index needs (SELECT on its columns, no row-level security).
extern "C" Datum bloom_index_shards(PG_FUNCTION_ARGS) {
    const Oid index_oid = PG_GETARG_OID(0);
    Relation index = open_bloomfilter_index(index_oid);
    const IndexCheck *check = index_check(index);
    if (!citus_table(check->heap_oid))
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("\"%s\" is not the index of a Citus table", RelationGetRelationName(index)),
                 errhint("Its table holds its rows: read the index itself.")));
    check_may_read_shards(index, check, "bloom_index_shards");
    const Oid heap_oid = check->heap_oid;
    index_close(index, NoLock);

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo *result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    Oid types[2] = {REGCLASSOID, REGCLASSOID};
    Datum values[2] = {ObjectIdGetDatum(index_oid), ObjectIdGetDatum(heap_oid)};
    if (SPI_execute_with_args(kShardsQuery, 2, types, values, nullptr, true, 0) != SPI_OK_SELECT)
        elog(ERROR, "could not read the shards of \"%s\"", get_rel_name(heap_oid));
    for (uint64 row = 0; row < SPI_processed; row++) {
        HeapTuple tuple = SPI_tuptable->vals[row];
        Datum out[4];
        bool nulls[4];
        for (int column = 0; column < 4; column++)
            out[column] = SPI_getbinval(tuple, SPI_tuptable->tupdesc, column + 1, &nulls[column]);
        // Copied out of SPI's memory by tuplestore_putvalues.
        tuplestore_putvalues(result->setResult, result->setDesc, out, nulls);
    }
    SPI_finish();
    return (Datum)0;
}
