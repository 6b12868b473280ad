// A Citus table's bloomfilter index: where its shards' indexes are (bloom_index_shards), and the
// check of a key against all of them: a sample scan of the table by bloom_index_probe, which
// Citus runs on every shard over this transaction's connections (shards_probe), or for a
// partitioned table one statement a node through Citus's runner (shards_contain). Citus creates
// the index on each shard of the table (named by shard_name()), on the nodes that hold the
// shard's placements; the coordinator's index is the shell table's and holds nothing. A key is
// present when one of the shards' indexes says so.
#include "index_access.hpp"

extern "C" {
#include "access/tsmapi.h"
#include "access/transam.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "parser/parse_func.h"
#include "utils/varlena.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_shards);
PG_FUNCTION_INFO_V1(bloom_index_probe);
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

// One active placement of each shard of the table $2, the one on this node first, and the qualified
// name of the shard's index ($1), always with its schema (shard_name's third argument): the name is
// resolved on the node, in the search_path of Citus's connection. A shard with no active placement
// gives a row with a null node: its rows are nowhere to ask.
const char *const kPlacementsQuery =
    "SELECT DISTINCT ON (s.shardid) s.shardid, pg_catalog.shard_name($1, s.shardid, false), "
    "n.nodename, n.nodeport "
    "FROM pg_catalog.pg_dist_shard s "
    "LEFT JOIN (pg_catalog.pg_dist_placement p "
    "JOIN pg_catalog.pg_dist_node n ON n.groupid OPERATOR(pg_catalog.=) p.groupid "
    "AND n.isactive AND n.noderole OPERATOR(pg_catalog.=) 'primary' "
    "AND p.shardstate OPERATOR(pg_catalog.=) 1) ON p.shardid OPERATOR(pg_catalog.=) s.shardid "
    "WHERE s.logicalrelid OPERATOR(pg_catalog.=) $2 "
    "ORDER BY s.shardid, p.groupid OPERATOR(pg_catalog.=) "
    "(SELECT groupid FROM pg_catalog.pg_dist_local_group) DESC, n.nodename, n.nodeport";

// The start of each statement sent to a node: a shard check received there (debug_query_string)
// never asks other nodes in turn, should a shard index's name resolve to a Citus table's.
const char kShardCheck[] = "/* bloomfilter shard check */ ";

// The third argument of bloom_index_probe for a multicolumn index's key: this prefix and the
// number of key columns (2 to kMaxKeyParts, one digit), the second argument the composite key's
// 64-bit hash in decimal.
const char kCompositeKind[] = "composite:";

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

// After TRUNCATE or ALTER TABLE in this transaction, a connection of the runner's would wait for
// it forever, and the sample scan's ends in Citus's distributed deadlock (40P01) after a while:
// refused at once.
void check_not_locked_exclusively(Relation index, Oid heap_oid, const char *function) {
    if (CheckRelationLockedByMe(index, AccessExclusiveLock, false) ||
        CheckRelationOidLockedByMe(heap_oid, AccessExclusiveLock, false))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_IN_USE),
                        errmsg("%s cannot check index \"%s\": this transaction locked table \"%s\" "
                               "exclusively",
                               function, RelationGetRelationName(index), get_rel_name(heap_oid)),
                        errdetail("The shards' indexes are read on their nodes, where this "
                                  "transaction's lock makes the check wait for it.")));
}

// For a partitioned table's index (a sample scan of its shards reaches the partitions' shards,
// not the table's), or in a parallel worker (where Citus's executor refuses): on each node holding
// shards, one statement, run as the caller by Citus on a connection of its own: the function the
// caller called, on the regclass of each of the node's shard indexes, with the caller's values
// (one, or a multicolumn index's), or'ed. The values and the names travel as quoted literals
// (quote_literal of their text form, cast to their key type, a built-in one), never spliced raw;
// the function is qualified with the extension's schema, the same on every node.
ShardAnswer shards_contain(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                           int count, const Datum *values, const Oid *value_types) {
    if (debug_query_string != nullptr &&
        strncmp(debug_query_string, kShardCheck, sizeof(kShardCheck) - 1) == 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s cannot check index \"%s\" of Citus table \"%s\" in a shard "
                               "check: it holds no rows",
                               function, RelationGetRelationName(index), get_rel_name(heap_oid))));
    check_not_locked_exclusively(index, heap_oid, function);

    Assert(count >= 1 && count <= int(kMaxKeyParts));
    // ", 'v1'::t1, 'v2'::t2 ...": a domain's value as its base type's, whose output is the same.
    StringInfoData literals;
    initStringInfo(&literals);
    for (int part = 0; part < count; part++) {
        const Oid type = key_base_type(value_types[part]);
        Oid value_output;
        bool varlena;
        getTypeOutputInfo(type, &value_output, &varlena);
        appendStringInfo(&literals, ", %s::%s",
                         quote_literal_cstr(OidOutputFunctionCall(value_output, values[part])),
                         format_type_be_qualified(type));
    }
    const char *call =
        quote_qualified_identifier(get_namespace_name(get_func_namespace(function_oid)), function);

    // The nodes' commands, in the caller's memory: SPI_finish frees SPI's.
    MemoryContext caller = CurrentMemoryContext;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    Oid types[2] = {REGCLASSOID, REGCLASSOID};
    Datum args[2] = {ObjectIdGetDatum(RelationGetRelid(index)), ObjectIdGetDatum(heap_oid)};
    if (SPI_execute_with_args(kPlacementsQuery, 2, types, args, nullptr, true, 0) != SPI_OK_SELECT)
        elog(ERROR, "could not read the shards of \"%s\"", get_rel_name(heap_oid));
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

    const int node_count = list_length(nodes);
    Datum *names = static_cast<Datum *>(palloc(node_count * sizeof(Datum)));
    Datum *ports = static_cast<Datum *>(palloc(node_count * sizeof(Datum)));
    Datum *commands = static_cast<Datum *>(palloc(node_count * sizeof(Datum)));
    int i = 0;
    ListCell *cell;
    foreach (cell, nodes) {
        NodeCommand *node = static_cast<NodeCommand *>(lfirst(cell));
        StringInfoData command;
        initStringInfo(&command);
        appendStringInfo(&command,
                         "%sSELECT pg_catalog.bool_or(%s(i%s)) "
                         "FROM pg_catalog.unnest(ARRAY[%s]) AS i",
                         kShardCheck, call, literals.data, node->indexes.data);
        names[i] = CStringGetTextDatum(node->name);
        ports[i] = Int32GetDatum(node->port);
        commands[i] = CStringGetTextDatum(command.data);
        i++;
    }
    Datum run_args[3] = {
        PointerGetDatum(construct_array(names, node_count, TEXTOID, -1, false, TYPALIGN_INT)),
        PointerGetDatum(construct_array(ports, node_count, INT4OID, 4, true, TYPALIGN_INT)),
        PointerGetDatum(construct_array(commands, node_count, TEXTOID, -1, false, TYPALIGN_INT))};
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

namespace {

// One statement on the coordinator, which Citus sends to every shard over the connections of
// this transaction: a sample scan of each shard by bloom_index_probe, which returns a row of the
// shard when the shard's index may hold the key, none otherwise. The shell index's qualified name,
// the key (its text form, or a composite key's hash) and its kind (its type's OID, or
// kCompositeKind and the number of key columns) travel as quoted literals (quote_literal, never
// spliced raw): Citus resolves no parameter of a TABLESAMPLE clause in a query it routes to one
// shard (a single-shard, reference or Citus local table), and would send it null.
bool probe_shards(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                  const char *key_text, const char *key_kind) {
    check_not_locked_exclusively(index, heap_oid, function);
    // The extension's schema: the caller's (bloom_index_contains's).
    const Oid function_namespace = get_func_namespace(function_oid);
    const char *index_name = quote_qualified_identifier(
        get_namespace_name(RelationGetNamespace(index)), RelationGetRelationName(index));
    StringInfoData query;
    initStringInfo(&query);
    appendStringInfo(
        &query, "SELECT 1 FROM %s TABLESAMPLE %s(%s, %s, %s) LIMIT 1",
        quote_qualified_identifier(get_namespace_name(get_rel_namespace(heap_oid)),
                                   get_rel_name(heap_oid)),
        quote_qualified_identifier(get_namespace_name(function_namespace), "bloom_index_probe"),
        quote_literal_cstr(index_name), quote_literal_cstr(key_text), quote_literal_cstr(key_kind));
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    if (SPI_execute(query.data, true, 1) != SPI_OK_SELECT)
        elog(ERROR, "could not probe the shards of \"%s\"", get_rel_name(heap_oid));
    const bool present = SPI_processed > 0;
    SPI_finish();
    return present;
}

}  // namespace

namespace bloomfilter {

bool shards_probe(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                  const char *key_text, Oid key_type) {
    return probe_shards(index, heap_oid, function_oid, function, key_text,
                        psprintf("%u", key_type));
}

// The hash in decimal, the kind "composite:<key columns>": no input function of any type reads
// them on the shard, and the shard's index must have as many key columns as the shell's.
bool shards_probe_hash(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                       KeyHash h) {
    Assert(h.high == 0);
    return probe_shards(
        index, heap_oid, function_oid, function, psprintf(UINT64_FORMAT, h.low),
        psprintf("%s%d", kCompositeKind, IndexRelationGetNumberOfKeyAttributes(index)));
}

}  // namespace bloomfilter

namespace {

// The sample scan of one shard: when its index may hold the key, the first tuple of the shard's
// heap, whatever its visibility; none otherwise. The index's bits answer, not the rows a snapshot
// sees: under REPEATABLE READ a shard's key committed after the transaction's snapshot (on a shard
// with no row visible to it) is still present. A shard holding a key holds a tuple for it.
struct ProbeState {
    bool present;
    bool answered;  // a tuple went out: the scan ends
    BlockNumber next_block;
};

void probe_sample_size(PlannerInfo *root, RelOptInfo *baserel, List *paramexprs, BlockNumber *pages,
                       double *tuples) {
    *pages = baserel->pages > 0 ? 1 : 0;
    *tuples = 1;
}

void probe_init(SampleScanState *node, int eflags) {
    node->tsm_state = palloc0(sizeof(ProbeState));
}

// Citus's name of a shard, or of a shard's index: shard_name(relation, shard id, false).
char *shard_name_of(Oid relation, int64 shard) {
    Oid argument_types[3] = {REGCLASSOID, INT8OID, BOOLOID};
    const Oid function = LookupFuncName(list_make2(makeString(const_cast<char *>("pg_catalog")),
                                                   makeString(const_cast<char *>("shard_name"))),
                                        3, argument_types, false);
    return TextDatumGetCString(OidFunctionCall3(function, ObjectIdGetDatum(relation),
                                                Int64GetDatum(shard), BoolGetDatum(false)));
}

// A multicolumn index's key as bloom_index_probe receives it (shards_probe_hash): the kind
// "composite:N", N one digit from 2 to kMaxKeyParts, and the hash in decimal, digits alone, at
// most UINT64_MAX. Anything else: 22023, before any index is read.
struct ProbeHash {
    int columns;
    KeyHash h;
};

bool composite_kind(const char *kind) {
    return strncmp(kind, kCompositeKind, sizeof(kCompositeKind) - 1) == 0;
}

ProbeHash parse_probe_hash(const char *key_text, const char *kind) {
    const char *count = kind + sizeof(kCompositeKind) - 1;
    if (!(count[0] >= '2' && count[0] <= '0' + int(kMaxKeyParts) && count[1] == '\0'))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("bloom_index_probe: \"%s\" is not \"%s\" and a number of key "
                               "columns from 2 to %d",
                               kind, kCompositeKind, int(kMaxKeyParts))));
    const size_t length = strlen(key_text);
    bool digits = length > 0 && length <= 20;
    for (size_t i = 0; digits && i < length; i++) digits = key_text[i] >= '0' && key_text[i] <= '9';
    char *end = nullptr;
    errno = 0;
    const unsigned long long hash = digits ? strtoull(key_text, &end, 10) : 0;
    if (!digits || errno != 0 || end == nullptr || *end != '\0')
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("bloom_index_probe: \"%s\" is not a composite key's hash, an "
                               "unsigned 64-bit number in decimal",
                               key_text)));
    return ProbeHash{count[0] - '0', KeyHash{uint64_t(hash), 0}};
}

// Whether the index of `table` (a shard) that stands for the shell index named by params[0] may
// hold the key params[1] of type params[2] (its OID, as text), or the composite key of hash
// params[1] (params[2]: kCompositeKind and the number of key columns, which the shell's index
// and the shard's must have): the caller needs what reading that index needs.
bool shard_contains(Relation table, Datum *params) {
    const char *kind = TextDatumGetCString(params[2]);
    const bool composite = composite_kind(kind);
    // Validated first: a malformed probe reads nothing.
    ProbeHash probe_hash{0, KeyHash{0, 0}};
    if (composite) probe_hash = parse_probe_hash(TextDatumGetCString(params[1]), kind);
    RangeVar *shell_name =
        makeRangeVarFromNameList(textToQualifiedNameList(DatumGetTextPP(params[0])));
    Relation shell = open_bloomfilter_index(RangeVarGetRelid(shell_name, NoLock, false));
    const Oid shell_oid = RelationGetRelid(shell);
    const Oid shell_table = shell->rd_index->indrelid;
    const int shell_columns = IndexRelationGetNumberOfKeyAttributes(shell);
    index_close(shell, NoLock);
    const char *table_name = RelationGetRelationName(table);
    const char *qualified =
        quote_qualified_identifier(get_namespace_name(RelationGetNamespace(table)), table_name);
    // Citus names a shard <table>_<shard id>: the id, checked against Citus's own name.
    const char *suffix = strrchr(table_name, '_');
    char *end = nullptr;
    const int64 shard = suffix != nullptr ? strtoll(suffix + 1, &end, 10) : 0;
    if (!citus_table(shell_table) || shard <= 0 || end == nullptr || *end != '\0' ||
        strcmp(shard_name_of(shell_table, shard), qualified) != 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("bloom_index_probe: \"%s\" is not a shard of the table of Citus "
                               "index \"%s\"",
                               table_name, get_rel_name(shell_oid))));
    RangeVar *index_name = makeRangeVarFromNameList(
        textToQualifiedNameList(cstring_to_text(shard_name_of(shell_oid, shard))));
    const Oid shard_index = RangeVarGetRelid(index_name, NoLock, false);
    if (IndexGetRelation(shard_index, false) != RelationGetRelid(table))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("bloom_index_probe: \"%s\" is not an index of \"%s\"",
                               get_rel_name(shard_index), table_name)));
    if (composite) {
        // The coordinator hashed the values for the shell's key columns: the shard's index
        // (checked there) must have as many, and so must the shell here.
        if (shell_columns != probe_hash.columns)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("bloom_index_probe: index \"%s\" has %d key column%s, not %d",
                                   get_rel_name(shell_oid), shell_columns,
                                   shell_columns == 1 ? "" : "s", probe_hash.columns)));
        return shard_index_contains_hash(shard_index, probe_hash.columns, probe_hash.h);
    }
    // Keys are of built-in types only, whose OIDs are the same on every node: no type owner's
    // input function runs here.
    const char *type_text = kind;
    char *type_end = nullptr;
    errno = 0;
    const unsigned long key_type = strtoul(type_text, &type_end, 10);
    if (errno != 0 || type_end == type_text || *type_end != '\0' || key_type == InvalidOid ||
        key_type >= FirstNormalObjectId ||
        !SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(key_type)))
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("bloom_index_probe: \"%s\" is not the OID of a built-in type", type_text)));
    Oid input;
    Oid input_parameter;
    getTypeInputInfo(Oid(key_type), &input, &input_parameter);
    const Datum key =
        OidInputFunctionCall(input, TextDatumGetCString(params[1]), input_parameter, -1);
    bool is_null;
    return index_contains_key(shard_index, key, Oid(key_type), &is_null);
}

// The scan returns tuples whatever their visibility: nothing of them may leave it. Only the
// presence of a row is an answer: a plan that reads a column (a target, a filter, a join's
// key, a system column) is refused.
void check_reads_no_column(SampleScanState *node) {
    const Plan *plan = node->ss.ps.plan;
    if (plan->qual != NIL || contain_var_clause(reinterpret_cast<Node *>(plan->targetlist)))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("bloom_index_probe returns rows without their columns"),
                        errdetail("A query sampling \"%s\" with it may read no column of it.",
                                  RelationGetRelationName(node->ss.ss_currentRelation))));
}

void probe_begin(SampleScanState *node, Datum *params, int nparams, uint32 seed) {
    check_reads_no_column(node);
    ProbeState *state = static_cast<ProbeState *>(node->tsm_state);
    state->answered = false;
    state->next_block = 0;
    state->present = shard_contains(node->ss.ss_currentRelation, params);
    // Made here, the scan is the sample scan's own (a rescan keeps it): every tuple is visible
    // to it, none is read beyond its line pointer. A heap's: its page is read for line pointers.
    if (node->ss.ss_currentRelation->rd_tableam != GetHeapamTableAmRoutine())
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("bloom_index_probe samples heap tables only, not \"%s\"",
                               RelationGetRelationName(node->ss.ss_currentRelation))));
    if (node->ss.ss_currentScanDesc == nullptr)
        node->ss.ss_currentScanDesc =
            table_beginscan_sampling(node->ss.ss_currentRelation, SnapshotAny, 0, nullptr,
                                     node->use_bulkread, false, node->use_pagemode);
}

BlockNumber probe_next_block(SampleScanState *node, BlockNumber nblocks) {
    ProbeState *state = static_cast<ProbeState *>(node->tsm_state);
    if (!state->present || state->answered || state->next_block >= nblocks)
        return InvalidBlockNumber;
    return state->next_block++;
}

// The first tuple of the shard: the first normal line pointer of the first page that has one,
// read off the page the heap's scan holds (locked: the scan of SnapshotAny is not in page mode).
OffsetNumber probe_next_tuple(SampleScanState *node, BlockNumber block, OffsetNumber maxoffset) {
    ProbeState *state = static_cast<ProbeState *>(node->tsm_state);
    if (state->answered) return InvalidOffsetNumber;
    const Page page =
        BufferGetPage(reinterpret_cast<HeapScanDesc>(node->ss.ss_currentScanDesc)->rs_cbuf);
    for (OffsetNumber offset = FirstOffsetNumber; offset <= maxoffset;
         offset = OffsetNumberNext(offset)) {
        if (ItemIdIsNormal(PageGetItemId(page, offset))) {
            state->answered = true;
            return offset;
        }
    }
    return InvalidOffsetNumber;
}

}  // namespace

// bloom_index_probe(internal): the tablesample method of a shard check (shards_probe):
// TABLESAMPLE bloom_index_probe(shell index name, key text, key type's OID), all text.
extern "C" Datum bloom_index_probe(PG_FUNCTION_ARGS) {
    TsmRoutine *routine = makeNode(TsmRoutine);
    routine->parameterTypes = list_make3_oid(TEXTOID, TEXTOID, TEXTOID);
    routine->repeatable_across_queries = true;
    routine->repeatable_across_scans = true;
    routine->SampleScanGetSampleSize = probe_sample_size;
    routine->InitSampleScan = probe_init;
    routine->BeginSampleScan = probe_begin;
    routine->NextSampleBlock = probe_next_block;
    routine->NextSampleTuple = probe_next_tuple;
    routine->EndSampleScan = nullptr;
    PG_RETURN_POINTER(routine);
}

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
