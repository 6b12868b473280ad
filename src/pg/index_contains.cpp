// bloom_index_contains: the check of a bloomfilter index, through an expression index's
// expression and over a partitioned index's partitions.
#include "index_access.hpp"

extern "C" {
#include "access/genam.h"
#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/ruleutils.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_contains);
PG_FUNCTION_INFO_V1(bloom_index_contains_key);
PG_FUNCTION_INFO_V1(bloom_index_contains_named);
PG_FUNCTION_INFO_V1(bloom_index_contains_key_named);
}

namespace {

// Which values can be keys of which column types: the same bytes are hashed.
enum class KeyFamily { text, bytea, integer, uuid, other };

KeyFamily key_family(Oid type) {
    switch (type) {
        case TEXTOID:
        case VARCHAROID: return KeyFamily::text;
        case BYTEAOID: return KeyFamily::bytea;
        case INT2OID:
        case INT4OID:
        case INT8OID: return KeyFamily::integer;
        case UUIDOID: return KeyFamily::uuid;
        default: return KeyFamily::other;
    }
}

// The value as the column's type, or false when no value of the column's type can equal it (an
// integer out of the column's range).
bool value_as_column(Datum value, Oid value_type, Oid column_type, Datum *out) {
    if (column_type == INT2OID || column_type == INT4OID) {
        const int64 v = DatumGetInt64(value);
        if (column_type == INT2OID) {
            if (v < PG_INT16_MIN || v > PG_INT16_MAX) return false;
            *out = Int16GetDatum(int16(v));
        } else {
            if (v < PG_INT32_MIN || v > PG_INT32_MAX) return false;
            *out = Int32GetDatum(int32(v));
        }
        return true;
    }
    *out = value;
    return true;
}

// The partition of `table`, partitioned by one key column alone, that rows with this value
// go to: 1 and the partition in *partition, 0 when no partition takes the value, -1 when its
// strategy is unknown (any partition may hold the value).
int route_value(Relation table, Datum column_value, Oid *partition) {
    PartitionKey key = RelationGetPartitionKey(table);
    PartitionDesc desc = RelationGetPartitionDesc(table, false);
    PartitionBoundInfo bounds = desc->boundinfo;
    if (desc->nparts == 0 || bounds == nullptr) return 0;
    int part = -1;
    bool equal = false;
    switch (get_partition_strategy(key)) {
        case PARTITION_STRATEGY_HASH: {
            bool isnull = false;
            const uint64 hash = compute_partition_hash_value(
                key->partnatts, key->partsupfunc, key->partcollation, &column_value, &isnull);
            part = bounds->indexes[hash % bounds->nindexes];
            break;
        }
        case PARTITION_STRATEGY_LIST: {
            const int offset = partition_list_bsearch(key->partsupfunc, key->partcollation, bounds,
                                                      column_value, &equal);
            if (offset >= 0 && equal) part = bounds->indexes[offset];
            break;
        }
        case PARTITION_STRATEGY_RANGE: {
            const int offset = partition_range_datum_bsearch(key->partsupfunc, key->partcollation,
                                                             bounds, 1, &column_value, &equal);
            part = bounds->indexes[offset + 1];
            break;
        }
        default: return -1;
    }
    if (part < 0) part = bounds->default_index;
    if (part < 0) return 0;
    *partition = desc->oids[part];
    return 1;
}

// Leaf indexes checked a few at a time: each is opened and its page pinned and prefetched
// before any of them is read, so that their cache misses overlap instead of coming one by one.
class LeafBatch {
public:
    // Opens a leaf and locates the key's block; a leaf whose blocks span pages is checked at
    // once. Returns false when that check found the key.
    bool add(const IndexCheck *check, Oid index_oid, Oid table_oid, KeyHash h) {
        // The partition's table before its index, as for the index checked (see
        // open_bloomfilter_index). A partition dropped since the partitions were listed holds no
        // rows any more: its lock is taken on an OID with nothing behind it.
        LockRelationOid(table_oid, AccessShareLock);
        Relation leaf = try_relation_open(index_oid, AccessShareLock);
        if (leaf == nullptr) return true;
        Assert(CheckRelationOidLockedByMe(table_oid, AccessShareLock, true));
        // Replaced by REINDEX CONCURRENTLY since the partitions were listed (the lock just taken
        // took the swap in, and marked the list to be worked out again): the caller lists them
        // again and reads the new index.
        if (!leaf->rd_index->indisvalid && !check->valid) {
            index_close(leaf, NoLock);
            return true;
        }
        check_valid(leaf);
        Buffer buffer;
        const uint8_t *block = index_locate_block(leaf, h, &buffer);
        if (block == nullptr) {
            found_ = found_ || index_contains(leaf, h);
            index_close(leaf, NoLock);
            return !found_;
        }
        leaves_[count_] = {leaf, buffer, block};
        count_++;
        return true;
    }
    bool full() const { return count_ == kSize; }
    // Checks the leaves added since the last check, and releases them; true when one, or an
    // earlier one, may hold the key.
    bool check(KeyHash h) {
        for (int i = 0; i < count_; i++) {
            found_ = found_ ||
                     index_block_contains(leaves_[i].index, leaves_[i].buffer, leaves_[i].block, h);
            ReleaseBuffer(leaves_[i].buffer);
            index_close(leaves_[i].index, NoLock);
        }
        count_ = 0;
        return found_;
    }

private:
    static constexpr int kSize = 8;
    struct Leaf {
        Relation index;
        Buffer buffer;
        const uint8_t *block;
    };
    Leaf leaves_[kSize];
    int count_ = 0;
    bool found_ = false;
};

// Whether a partition's index, under the partitioned index `index` of `table`, may hold the key:
// only the partition the values route to is visited when the partition key is one of the
// index's key columns (`routed_by`), every partition otherwise.
bool partitions_contain(const IndexCheck *check, Oid table, int routed_by, Oid index,
                        const Datum *column_values, KeyHash h) {
    Oid routed = InvalidOid;
    if (routed_by >= 0) {
        Relation parent = try_relation_open(table, AccessShareLock);
        if (parent == nullptr) return false;  // dropped since the partitions were listed
        const int routes = route_value(parent, column_values[routed_by], &routed);
        relation_close(parent, NoLock);
        if (routes == 0) return false;
    }
    for (;;) {
        bool visited = false;
        LeafBatch batch;
        ListCell *cell;
        foreach (cell, check->parts) {
            const PartIndex *part = static_cast<const PartIndex *>(lfirst(cell));
            if (part->parent_index != index || (OidIsValid(routed) && part->table != routed))
                continue;
            visited = true;
            bool present = false;
            if (part->leaf) {
                present = !batch.add(check, part->index, part->table, h) ||
                          (batch.full() && batch.check(h));
            } else {
                present = batch.check(h) || partitions_contain(check, part->table, part->routed_by,
                                                               part->index, column_values, h);
            }
            // check() also releases the leaves still in the batch.
            if (present || OidIsValid(routed)) return batch.check(h) || present;
        }
        if (batch.check(h)) return true;
        // The partition the value routes to has no index under this one (it is being attached
        // or detached): every partition is visited instead.
        if (!OidIsValid(routed) || visited) return false;
        routed = InvalidOid;
    }
}

// Opens the index (its table locked first) and what a check of it needs, once the caller may read
// it and the value's type can be one of its keys. Privileges are checked at every call, as the
// executor checks a statement's: a REVOKE another session committed, or a GRANT a rolled-back
// subtransaction made, takes effect at once. *run_as: the role an expression index's expression
// runs as, the owner for a caller with its privileges, else the caller (built-in code alone).
// *sharded: a Citus table's index, whose shards' indexes answer (shards_contain).
IndexCheck *open_for_check(FunctionCallInfo fcinfo, const char *function, bool by_name,
                           Oid value_type, bool key_given, Relation *opened, Oid *run_as,
                           bool *sharded) {
    Oid heap_oid = InvalidOid;
    // fn_extra: the name this call site resolved last.
    const Oid index_oid =
        by_name ? resolve_index_name(PG_GETARG_TEXT_PP(0), &heap_oid,
                                     reinterpret_cast<ResolvedName **>(&fcinfo->flinfo->fn_extra),
                                     fcinfo->flinfo->fn_mcxt)
                : PG_GETARG_OID(0);
    Relation index = open_bloomfilter_index(index_oid, heap_oid);
    *opened = index;
    IndexCheck *check = index_check(index);
    check_key_count(index, 1, function);
    // The same privileges for a Citus table's index, whose shards' nodes check them again.
    *sharded = citus_table(check->heap_oid);
    check_may_read_shards(index, check, function);
    check_partitions_indexed(index, check);
    Oid key_type = check->column_type;
    *run_as = GetUserId();
    if (check->expression && !key_given && has_owner_privileges(check->heap_owner))
        *run_as = check->heap_owner;
    if (key_given) {
        key_type = getBaseType(TupleDescAttr(RelationGetDescr(index), 0)->atttypid);
    } else if (check->expression && check->column == InvalidAttrNumber) {
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("bloom_index_contains needs an index on one column or on an "
                               "expression of one column; \"%s\" is not",
                               RelationGetRelationName(index)),
                        errhint("Pass the key, the expression's value, to "
                                "bloom_index_contains_key.")));
    } else if (check->expression && !check->built_in_expression && *run_as != check->heap_owner) {
        // The owner's functions would run with the owner's rights on a value the caller chose,
        // in the caller's session: never for a role that could not run them so itself.
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("bloom_index_contains cannot apply the expression of index \"%s\" for "
                        "role \"%s\"",
                        RelationGetRelationName(index), GetUserNameFromId(GetUserId(), false)),
                 errdetail("The expression %s runs code that is not built into PostgreSQL, "
                           "which only the table's owner and its members may have run as the "
                           "owner.",
                           pg_get_indexdef_columns(RelationGetRelid(index), true)),
                 errhint("Apply the expression to the value yourself and check the result "
                         "with bloom_index_contains_key.")));
    }
    if (key_family(value_type) != key_family(key_type) ||
        key_family(value_type) == KeyFamily::other)
        ereport(ERROR,
                (errcode(ERRCODE_DATATYPE_MISMATCH),
                 errmsg("index \"%s\" has keys of type %s, not %s", RelationGetRelationName(index),
                        format_type_be(key_type), format_type_be(value_type))));
    return check;
}

}  // namespace

namespace bloomfilter {

// The expression of `info` (of one key column) of a value of the table's column `column`,
// evaluated in the check's per-tuple memory (reset by the caller). The expression's functions are
// the table owner's code: they run as `run_as` (open_for_check's choice), under the restrictions
// of enter_as_owner, and EXECUTE on each is checked first (check_execute). *planned: the
// functions of the planned expression are in the check's.
Datum evaluate_index_expression(IndexCheck *check, IndexInfo *info, AttrNumber column,
                                bool *planned, Oid run_as, Datum column_value, bool *is_null) {
    TupleTableSlot *slot = check->slot;
    ExecClearTuple(slot);
    for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++) {
        slot->tts_values[i] = (Datum)0;
        slot->tts_isnull[i] = true;
    }
    slot->tts_values[column - 1] = column_value;
    slot->tts_isnull[column - 1] = false;
    ExecStoreVirtualTuple(slot);
    GetPerTupleExprContext(check->estate)->ecxt_scantuple = slot;
    const AsOwner saved = enter_as_owner(run_as);
    check_execute(check);
    MemoryContext previous = MemoryContextSwitchTo(GetPerTupleMemoryContext(check->estate));
    Datum key;
    check->in_use = true;
    PG_TRY();
    { FormIndexDatum(info, slot, check->estate, &key, is_null); }
    PG_CATCH();
    {
        check->in_use = false;
        PG_RE_THROW();
    }
    PG_END_TRY();
    check->in_use = false;
    // The first evaluation planned the expression (as run_as) and checked EXECUTE on what the
    // planner made of it, an inlined SQL function's body included: later ones check that too.
    if (!*planned && info->ii_ExpressionsState != NIL) {
        MemoryContextSwitchTo(check->context);
        add_executed_functions(
            reinterpret_cast<Node *>(
                static_cast<ExprState *>(linitial(info->ii_ExpressionsState))->expr),
            &check->functions);
        *planned = true;
        check->executable_by = InvalidOid;
    }
    MemoryContextSwitchTo(previous);
    leave_as_owner(saved);
    return key;
}

}  // namespace bloomfilter

namespace {

// A one-column expression index's expression of a value of its column.
Datum evaluate_expression(IndexCheck *check, Oid run_as, Datum column_value, bool *is_null) {
    return evaluate_index_expression(check, check->index_info, check->column,
                                     &check->planned_functions, run_as, column_value, is_null);
}

enum class KeyOutcome { hash, absent, null };

// The key a value stands for: its hash; `absent` when no row can have it (an integer out of the
// column's range); `null` when the index's expression gives NULL.
KeyOutcome key_of(Relation index, IndexCheck *check, Oid run_as, Datum value, Oid value_type,
                  KeyHash *h) {
    if (!check->expression) {
        // The value's bytes are those the column's value would have (an integer is hashed as
        // the bigint of the same value).
        *h = hash_key(value, key_kind_of(value_type), kFormatVersion2);
        return KeyOutcome::hash;
    }
    Datum column_value;
    if (!value_as_column(value, value_type, check->column_type, &column_value))
        return KeyOutcome::absent;
    bool is_null;
    const Datum key = evaluate_expression(check, run_as, column_value, &is_null);
    if (!is_null) *h = index_key_hash(index, key);
    ResetPerTupleExprContext(check->estate);
    return is_null ? KeyOutcome::null : KeyOutcome::hash;
}

// Whether a partitioned index's partitions may hold the key. Locking a partition's table or index
// takes in the invalidations other sessions sent meanwhile: a partition attached since this
// transaction first locked the index can be routed to and yet be missing from the partitions
// listed, which are then worked out again and read again.
bool partitioned_contains(Relation index, IndexCheck *check, Datum value, Oid value_type,
                          KeyHash h) {
    Datum column_value = value;
    // No row of the column's type can hold an integer out of its range.
    if (!check->expression &&
        !value_as_column(value, value_type, check->column_type, &column_value))
        return false;
    for (;;) {
        if (partitions_contain(check, check->heap_oid, check->routed_by, check->index_oid,
                               &column_value, h))
            return true;
        if (check->valid) return false;
        check = index_check(index);
        check_partitions_indexed(index, check);
    }
}

}  // namespace

namespace {

// Every form: the index by name (text) or OID (regclass), the check of a value (`key_given`
// false) or of a key.
Datum check_index(FunctionCallInfo fcinfo, const char *function, bool by_name, bool key_given) {
    const Oid value_type = get_fn_expr_argtype(fcinfo->flinfo, 1);
    Relation index;
    Oid run_as;
    bool sharded;
    IndexCheck *check =
        open_for_check(fcinfo, function, by_name, value_type, key_given, &index, &run_as, &sharded);
    // In a parallel worker Citus's executor cannot take part in the transaction: the runner.
    if (sharded && !check->partitioned && !IsParallelWorker()) {
        // The shell's index holds no rows: the shards' indexes answer, for the key worked out
        // here (an expression index's expression applied as on one server).
        Datum key = PG_GETARG_DATUM(1);
        Oid key_type = value_type;
        bool is_null = false;
        Datum column_value;
        if (!key_given && check->expression) {
            if (!value_as_column(key, value_type, check->column_type, &column_value)) {
                index_close(index, NoLock);
                PG_RETURN_BOOL(false);  // no row of the column's type has it
            }
            key = evaluate_expression(check, run_as, column_value, &is_null);
            key_type = TupleDescAttr(RelationGetDescr(index), 0)->atttypid;
        }
        char *key_text = nullptr;
        if (!is_null) {
            Oid output;
            bool varlena;
            getTypeOutputInfo(key_type, &output, &varlena);
            key_text = OidOutputFunctionCall(output, key);
        }
        if (check->expression) ResetPerTupleExprContext(check->estate);
        const bool present =
            !is_null && shards_probe(index, check->heap_oid, fcinfo->flinfo->fn_oid, function,
                                     key_text, getBaseType(key_type));
        index_close(index, NoLock);
        if (is_null) PG_RETURN_NULL();
        PG_RETURN_BOOL(present);
    }
    if (sharded) {
        // A partitioned table's shards, or a parallel worker's check: each node asked on a
        // connection of its own, with the value (not a key worked out here); the same checks
        // are made there.
        const Datum value = PG_GETARG_DATUM(1);
        const ShardAnswer answer = shards_contain(index, check->heap_oid, fcinfo->flinfo->fn_oid,
                                                  function, 1, &value, &value_type);
        index_close(index, NoLock);
        if (answer == ShardAnswer::null) PG_RETURN_NULL();
        PG_RETURN_BOOL(answer == ShardAnswer::present);
    }
    KeyHash h;
    KeyOutcome outcome = KeyOutcome::hash;
    if (key_given)
        h = hash_key(PG_GETARG_DATUM(1), key_kind_of(value_type), kFormatVersion2);
    else
        outcome = key_of(index, check, run_as, PG_GETARG_DATUM(1), value_type, &h);
    bool present = false;
    if (outcome == KeyOutcome::hash)
        present = check->partitioned
                      ? partitioned_contains(index, check, PG_GETARG_DATUM(1), value_type, h)
                      : index_contains(index, h);
    index_close(index, NoLock);
    if (outcome == KeyOutcome::null) PG_RETURN_NULL();
    PG_RETURN_BOOL(present);
}

}  // namespace

namespace bloomfilter {

bool partitions_hold(Relation index, IndexCheck *check, const Datum *column_values, KeyHash h) {
    for (;;) {
        if (partitions_contain(check, check->heap_oid, check->routed_by, check->index_oid,
                               column_values, h))
            return true;
        if (check->valid) return false;
        check = index_check(index);
        check_partitions_indexed(index, check);
    }
}

// bloom_index_contains_key(index, key) called from C: a call expression of the key's type stands
// for the SQL one (check_index reads the argument's type from it).
bool index_contains_key(Oid index_oid, Datum key, Oid key_type, bool *is_null) {
    FmgrInfo flinfo;
    memset(&flinfo, 0, sizeof(flinfo));
    flinfo.fn_oid = InvalidOid;
    flinfo.fn_nargs = 2;
    flinfo.fn_strict = true;
    flinfo.fn_mcxt = CurrentMemoryContext;
    int16 length;
    bool by_value;
    get_typlenbyval(key_type, &length, &by_value);
    List *args = list_make2(makeConst(REGCLASSOID, -1, InvalidOid, sizeof(Oid),
                                      ObjectIdGetDatum(index_oid), false, true),
                            makeConst(key_type, -1, InvalidOid, length, key, false, by_value));
    flinfo.fn_expr = reinterpret_cast<Node *>(
        makeFuncExpr(InvalidOid, BOOLOID, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL));
    LOCAL_FCINFO(fcinfo, 2);
    InitFunctionCallInfoData(*fcinfo, &flinfo, 2, InvalidOid, nullptr, nullptr);
    fcinfo->args[0].value = ObjectIdGetDatum(index_oid);
    fcinfo->args[0].isnull = false;
    fcinfo->args[1].value = key;
    fcinfo->args[1].isnull = false;
    const Datum present = check_index(fcinfo, "bloom_index_contains_key", false, true);
    *is_null = fcinfo->isnull;
    return !fcinfo->isnull && DatumGetBool(present);
}

}  // namespace bloomfilter

// bloom_index_contains(index, value): false when no row of the index's table has that key
// (for an expression index: that the expression gives for the value); true when one probably
// does. NULL when the expression gives NULL. `index`: a regclass, or a name (text) resolved at
// each call (the _named entry point).
extern "C" Datum bloom_index_contains(PG_FUNCTION_ARGS) {
    return check_index(fcinfo, "bloom_index_contains", false, false);
}

extern "C" Datum bloom_index_contains_named(PG_FUNCTION_ARGS) {
    return check_index(fcinfo, "bloom_index_contains", true, false);
}

// bloom_index_contains_key(index, key): the same for a key as the index holds it, the value of
// an expression index's expression, which is not evaluated.
extern "C" Datum bloom_index_contains_key(PG_FUNCTION_ARGS) {
    return check_index(fcinfo, "bloom_index_contains_key", false, true);
}

extern "C" Datum bloom_index_contains_key_named(PG_FUNCTION_ARGS) {
    return check_index(fcinfo, "bloom_index_contains_key", true, true);
}
