// A Citus table's bloomfilter index: where its shards' indexes are (bloom_index_shards), and the
// check of a key against all of them (shards_contain). Citus creates the index on each shard of
// the table (named by shard_name()), on the nodes that hold the shard's placements; the
// coordinator's index is the shell table's and holds nothing. A key is present when one of the
// shards' indexes says so.
#include "index_access.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
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

// One active placement of each shard of the table $2 (of shard $3 alone when it is not null),
// the one on this node first, and the qualified name of the shard's index ($1), always with its
// schema (shard_name's third argument): the name is resolved on the node, in the search_path of
// Citus's connection. A shard with no active placement gives a row with a null node: its rows
// are nowhere to ask.
const char *const kPlacementsQuery =
    "SELECT DISTINCT ON (s.shardid) s.shardid, pg_catalog.shard_name($1, s.shardid, false), "
    "n.nodename, n.nodeport "
    "FROM pg_catalog.pg_dist_shard s "
    "LEFT JOIN (pg_catalog.pg_dist_placement p "
    "JOIN pg_catalog.pg_dist_node n ON n.groupid OPERATOR(pg_catalog.=) p.groupid "
    "AND n.isactive AND n.noderole OPERATOR(pg_catalog.=) 'primary' "
    "AND p.shardstate OPERATOR(pg_catalog.=) 1) ON p.shardid OPERATOR(pg_catalog.=) s.shardid "
    "WHERE s.logicalrelid OPERATOR(pg_catalog.=) $2 "
    "AND ($3 IS NULL OR s.shardid OPERATOR(pg_catalog.=) $3) "
    "ORDER BY s.shardid, p.groupid OPERATOR(pg_catalog.=) "
    "(SELECT groupid FROM pg_catalog.pg_dist_local_group) DESC, n.nodename, n.nodeport";

// The shard of a hash-distributed table $1 whose rows have the value $2 in the distribution
// column, when that column is named $3 (no row otherwise): Citus's own routing of the value.
const char *const kRouteQuery =
    "SELECT pg_catalog.get_shard_id_for_distribution_column(p.logicalrelid, $2) "
    "FROM pg_catalog.pg_dist_partition p "
    "WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1 "
    "AND p.partmethod OPERATOR(pg_catalog.=) 'h' "
    "AND pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) OPERATOR(pg_catalog.=) $3";

// The start of each statement sent to a node: a shard check received there (debug_query_string)
// never asks other nodes in turn, should a shard index's name resolve to a Citus table's.
const char kShardCheck[] = "/* bloomfilter shard check */ ";

// Citus's own runner: a new connection to each node, as the current user, in parallel, one
// command each, and each command's single value (or its error) as text.
const char *const kRunQuery =
    "SELECT node_name, node_port, success, result "
    "FROM pg_catalog.master_run_on_worker($1, $2, $3, true)";

struct NodeCommand {
    char *name;
    int32 port;
    StringInfoData indexes;  // quoted names of its shards' indexes, comma-separated
};

}  // namespace

namespace bloomfilter {

// On each node holding shards of the index's table (the value's shard alone, for an index of
// the distribution column), one statement, run as the caller by Citus on a connection of its
// own: the function the caller called, on the regclass of each of the node's shard indexes,
// with the caller's value, or'ed. The value and the names travel as quoted literals
// (quote_literal of their text form, cast to their type), never spliced raw; the function is
// qualified with the extension's schema, the same on every node.
ShardAnswer shards_contain(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                           Datum value, Oid value_type) {
    if (debug_query_string != nullptr &&
        strncmp(debug_query_string, kShardCheck, sizeof(kShardCheck) - 1) == 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s cannot check index \"%s\" of Citus table \"%s\" in a shard "
                               "check: it holds no rows",
                               function, RelationGetRelationName(index), get_rel_name(heap_oid))));
    // A connection of its own waits for this transaction's locks: after TRUNCATE or ALTER TABLE
    // in it, it would wait forever.
    if (CheckRelationLockedByMe(index, AccessExclusiveLock, false) ||
        CheckRelationOidLockedByMe(heap_oid, AccessExclusiveLock, false))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_IN_USE),
                        errmsg("%s cannot check index \"%s\": this transaction locked table \"%s\" "
                               "exclusively",
                               function, RelationGetRelationName(index), get_rel_name(heap_oid)),
                        errdetail("The shards' indexes are read on their nodes by connections of "
                                  "their own, which would wait for this transaction to end.")));

    Oid value_output;
    bool varlena;
    getTypeOutputInfo(value_type, &value_output, &varlena);
    const char *literal = quote_literal_cstr(OidOutputFunctionCall(value_output, value));
    const char *call =
        quote_qualified_identifier(get_namespace_name(get_func_namespace(function_oid)), function);
    const char *type = format_type_be_qualified(value_type);

    // The nodes' commands, in the caller's memory: SPI_finish frees SPI's.
    MemoryContext caller = CurrentMemoryContext;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    // An index of the distribution column, and a value of its type: only the value's shard can
    // hold it (a row with the same bytes hashes alike).
    Datum shard = 0;
    char shard_null = 'n';
    const AttrNumber column = index->rd_index->indkey.values[0];
    if (column != InvalidAttrNumber && index->rd_index->indnatts == 1 &&
        get_atttype(heap_oid, column) == value_type) {
        Oid route_types[3] = {REGCLASSOID, value_type, TEXTOID};
        Datum route_args[3] = {ObjectIdGetDatum(heap_oid), value,
                               CStringGetTextDatum(get_attname(heap_oid, column, false))};
        if (SPI_execute_with_args(kRouteQuery, 3, route_types, route_args, nullptr, true, 1) !=
            SPI_OK_SELECT)
            elog(ERROR, "could not route a value of \"%s\"", get_rel_name(heap_oid));
        bool null = true;
        if (SPI_processed == 1)
            shard = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &null);
        if (!null && DatumGetInt64(shard) > 0) shard_null = ' ';
    }
    Oid types[3] = {REGCLASSOID, REGCLASSOID, INT8OID};
    Datum args[3] = {ObjectIdGetDatum(RelationGetRelid(index)), ObjectIdGetDatum(heap_oid), shard};
    char nulls[4] = {' ', ' ', shard_null, '\0'};
    if (SPI_execute_with_args(kPlacementsQuery, 3, types, args, nulls, true, 0) != SPI_OK_SELECT)
        elog(ERROR, "could not read the shards of \"%s\"", get_rel_name(heap_oid));
    // A shard Citus routed to but not in this snapshot's catalog (split meanwhile): every shard.
    if (SPI_processed == 0 && shard_null == ' ') {
        nulls[2] = 'n';
        if (SPI_execute_with_args(kPlacementsQuery, 3, types, args, nulls, true, 0) !=
            SPI_OK_SELECT)
            elog(ERROR, "could not read the shards of \"%s\"", get_rel_name(heap_oid));
    }
    List *nodes = NIL;
    for (uint64 row = 0; row < SPI_processed; row++) {
        HeapTuple tuple = SPI_tuptable->vals[row];
        TupleDesc desc = SPI_tuptable->tupdesc;
        char *shard_id = SPI_getvalue(tuple, desc, 1);
        char *shard_index = SPI_getvalue(tuple, desc, 2);
        char *node = SPI_getvalue(tuple, desc, 3);
        bool port_null;
        const int32 port = DatumGetInt32(SPI_getbinval(tuple, desc, 4, &port_null));
        if (node == nullptr || port_null)
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("%s cannot check index \"%s\": shard %s of table \"%s\" has "
                                   "no active placement",
                                   function, RelationGetRelationName(index), shard_id,
                                   get_rel_name(heap_oid))));
        NodeCommand *target = nullptr;
        ListCell *cell;
        foreach (cell, nodes) {
            NodeCommand *known = static_cast<NodeCommand *>(lfirst(cell));
            if (known->port == port && strcmp(known->name, node) == 0) target = known;
        }
        if (target == nullptr) {
            MemoryContext previous = MemoryContextSwitchTo(caller);
            target = static_cast<NodeCommand *>(palloc0(sizeof(NodeCommand)));
            target->name = pstrdup(node);
            target->port = port;
            initStringInfo(&target->indexes);
            nodes = lappend(nodes, target);
            MemoryContextSwitchTo(previous);
        }
        if (target->indexes.len > 0) appendStringInfoString(&target->indexes, ", ");
        MemoryContext previous = MemoryContextSwitchTo(caller);
        appendStringInfo(&target->indexes, "%s::pg_catalog.regclass",
                         quote_literal_cstr(shard_index));
        MemoryContextSwitchTo(previous);
    }
    ShardAnswer answer = ShardAnswer::absent;
    if (nodes == NIL) {
        SPI_finish();
        return answer;  // no shard (an append-distributed table before its first): no rows
    }

    const int count = list_length(nodes);
    Datum *names = static_cast<Datum *>(palloc(count * sizeof(Datum)));
    Datum *ports = static_cast<Datum *>(palloc(count * sizeof(Datum)));
    Datum *commands = static_cast<Datum *>(palloc(count * sizeof(Datum)));
    int i = 0;
    ListCell *cell;
    foreach (cell, nodes) {
        NodeCommand *node = static_cast<NodeCommand *>(lfirst(cell));
        StringInfoData command;
        initStringInfo(&command);
        appendStringInfo(&command,
                         "%sSELECT pg_catalog.bool_or(%s(i, %s::%s)) "
                         "FROM pg_catalog.unnest(ARRAY[%s]) AS i",
                         kShardCheck, call, literal, type, node->indexes.data);
        names[i] = CStringGetTextDatum(node->name);
        ports[i] = Int32GetDatum(node->port);
        commands[i] = CStringGetTextDatum(command.data);
        i++;
    }
    Datum run_args[3] = {
        PointerGetDatum(construct_array(names, count, TEXTOID, -1, false, TYPALIGN_INT)),
        PointerGetDatum(construct_array(ports, count, INT4OID, 4, true, TYPALIGN_INT)),
        PointerGetDatum(construct_array(commands, count, TEXTOID, -1, false, TYPALIGN_INT))};
    Oid run_types[3] = {TEXTARRAYOID, INT4ARRAYOID, TEXTARRAYOID};
    // Citus polls the nodes' answers every citus.remote_task_check_interval (10 ms by default):
    // every 1 ms for these, the setting restored afterwards.
    const int guc_level = NewGUCNestLevel();
    (void)set_config_option("citus.remote_task_check_interval", "1", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    const int run = SPI_execute_with_args(kRunQuery, 3, run_types, run_args, nullptr, true, 0);
    AtEOXact_GUC(true, guc_level);
    if (run != SPI_OK_SELECT)
        elog(ERROR, "could not check the shards of \"%s\"", get_rel_name(heap_oid));
    bool any_null = false;
    for (uint64 row = 0; row < SPI_processed; row++) {
        HeapTuple tuple = SPI_tuptable->vals[row];
        TupleDesc desc = SPI_tuptable->tupdesc;
        bool null;
        const bool success = DatumGetBool(SPI_getbinval(tuple, desc, 3, &null));
        char *result = SPI_getvalue(tuple, desc, 4);
        // Citus's runner keeps the node's message, not its SQLSTATE.
        if (!success)
            ereport(ERROR, (errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
                            errmsg("%s could not check the shards of index \"%s\" on node %s:%s",
                                   function, RelationGetRelationName(index),
                                   SPI_getvalue(tuple, desc, 1), SPI_getvalue(tuple, desc, 2)),
                            errdetail("%s", result != nullptr ? result : "no answer")));
        // A single boolean, or nothing for NULL (an expression index's expression gave NULL).
        if (result == nullptr || result[0] == '\0')
            any_null = true;
        else if (strcmp(result, "t") == 0)
            answer = ShardAnswer::present;
        else if (strcmp(result, "f") != 0)
            elog(ERROR, "unexpected answer from node %s:%s: %s", SPI_getvalue(tuple, desc, 1),
                 SPI_getvalue(tuple, desc, 2), result);
    }
    if (answer == ShardAnswer::absent && any_null) answer = ShardAnswer::null;
    SPI_finish();
    return answer;
}

}  // namespace bloomfilter

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
