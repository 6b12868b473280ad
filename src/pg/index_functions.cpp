// SQL functions over bloomfilter indexes: the operator classes' hash functions (bloom_hash),
// the check bloom_index_contains, and bloom_index_filter, the index's filter as a bloom value.
#include "index_pages.hpp"

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/index.h"
#include "catalog/pg_inherits.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rls.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_hash_bytes);
PG_FUNCTION_INFO_V1(bloom_hash_int2);
PG_FUNCTION_INFO_V1(bloom_hash_int4);
PG_FUNCTION_INFO_V1(bloom_hash_int8);
PG_FUNCTION_INFO_V1(bloom_hash_uuid);
PG_FUNCTION_INFO_V1(bloom_index_contains);
PG_FUNCTION_INFO_V1(bloom_index_filter);
PG_FUNCTION_INFO_V1(bloom_index_changes);
}

namespace {

Datum hash_datum(Datum value, KeyKind kind) {
    return Int64GetDatum(int64(hash_key(value, kind, kFormatVersion2).low));
}

}  // namespace

// The 64-bit hash (format version 2's) of a key, as bigint: what a bloomfilter index's operator
// class hashes. smallint and integer are hashed as the bigint of the same value.
extern "C" Datum bloom_hash_bytes(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(PG_GETARG_DATUM(0), KeyKind::bytes));
}
extern "C" Datum bloom_hash_int2(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(Int64GetDatum(PG_GETARG_INT16(0)), KeyKind::int8));
}
extern "C" Datum bloom_hash_int4(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(Int64GetDatum(PG_GETARG_INT32(0)), KeyKind::int8));
}
extern "C" Datum bloom_hash_int8(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(PG_GETARG_DATUM(0), KeyKind::int8));
}
extern "C" Datum bloom_hash_uuid(PG_FUNCTION_ARGS) {
    PG_RETURN_DATUM(hash_datum(PG_GETARG_DATUM(0), KeyKind::uuid));
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

// What a check needs of an index, worked out on the first check in this backend and kept until
// the index or its table changes (a relcache invalidation of either): prepared statements run
// with a new fn_extra each time, and this work would cost more than the check itself.
struct IndexCheck {
    Oid index_oid;  // the hash key
    Oid heap_oid;
    bool valid;
    MemoryContext context;  // everything below
    Bitmapset *columns;     // the table's columns the index reads, for the privilege check
    bool partitioned;
    List *parts;  // a partitioned index's descendants: PartIndex entries, parents before children
    // The indexed column's name, when the index is on a plain column: where a partition key is
    // that column, a check visits only the partition the value routes to.
    char *column_name;
    // An expression index: the value stands for column `column` of the table, and the index's
    // expression of it is the key.
    bool expression;
    AttrNumber column;
    Oid column_type;  // of the value: the indexed column's, or the expression's column's
    Oid heap_owner;
    IndexInfo *index_info;
    EState *estate;
    TupleTableSlot *slot;
};

// An index under a partitioned index, and the table it indexes.
struct PartIndex {
    Oid index;
    Oid table;
    Oid parent_index;
    bool leaf;
};

HTAB *index_checks;

// An index that is not valid may miss keys: one being built by CREATE INDEX CONCURRENTLY (or
// left by a failed one), or a partitioned index some partition has no index for. Its "absent"
// could be wrong, so it answers nothing.
void check_valid(Relation index) {
    if (!index->rd_index->indisvalid)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("bloomfilter index \"%s\" is not valid", RelationGetRelationName(index)),
                        errdetail("It is being built, or was left by a failed CREATE INDEX CONCURRENTLY, "
                                  "or a partition has no index attached to it, and may miss keys."),
                        errhint("Wait for the build to finish, REINDEX it, or attach an index to "
                                "every partition.")));
}

Relation open_bloomfilter_index(Oid index_oid) {
    Relation index = index_open(index_oid, AccessShareLock);
    if (!is_bloomfilter_index(index))
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("\"%s\" is not a bloomfilter index", RelationGetRelationName(index))));
    check_valid(index);
    return index;
}

// Called inside invalidation processing, which can happen while a check is in use: it only
// marks, and index_check() frees.
void invalidate_index_checks(Datum, Oid relid) {
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, index_checks);
    for (IndexCheck *check; (check = static_cast<IndexCheck *>(hash_seq_search(&scan))) != nullptr;)
        if (relid == InvalidOid || check->index_oid == relid || check->heap_oid == relid)
            check->valid = false;
}

void forget_index_check(IndexCheck *check) {
    if (check->estate != nullptr) FreeExecutorState(check->estate);
    if (check->context != nullptr) MemoryContextDelete(check->context);
    const Oid key = check->index_oid;
    hash_search(index_checks, &key, HASH_REMOVE, nullptr);
}

// The index's table's columns it reads: key columns, and those of its expressions and predicate
// (as offsets by FirstLowInvalidHeapAttributeNumber, as pull_varattnos gives them).
Bitmapset *index_columns(Relation index) {
    Bitmapset *columns = nullptr;
    for (int i = 0; i < index->rd_index->indnatts; i++)
        if (index->rd_index->indkey.values[i] != 0)
            columns = bms_add_member(columns, index->rd_index->indkey.values[i] -
                                                  FirstLowInvalidHeapAttributeNumber);
    pull_varattnos(reinterpret_cast<Node *>(RelationGetIndexExpressions(index)), 1, &columns);
    pull_varattnos(reinterpret_cast<Node *>(RelationGetIndexPredicate(index)), 1, &columns);
    return columns;
}

void prepare_index_check(IndexCheck *check, Relation index) {
    check->heap_oid = index->rd_index->indrelid;
    check->columns = index_columns(index);
    check->partitioned = index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX;
    if (check->partitioned) {
        List *pending = list_make1_oid(check->index_oid);
        while (pending != NIL) {
            const Oid parent = linitial_oid(pending);
            pending = list_delete_first(pending);
            ListCell *cell;
            // Not locked here: a check locks the partitions' indexes it reads, and only those.
            foreach (cell, find_inheritance_children(parent, NoLock)) {
                const Oid table = IndexGetRelation(lfirst_oid(cell), true);
                if (!OidIsValid(table)) continue;
                PartIndex *part = static_cast<PartIndex *>(palloc(sizeof(PartIndex)));
                part->index = lfirst_oid(cell);
                part->table = table;
                part->parent_index = parent;
                part->leaf = get_rel_relkind(part->index) != RELKIND_PARTITIONED_INDEX;
                check->parts = lappend(check->parts, part);
                if (!part->leaf) pending = lappend_oid(pending, part->index);
            }
        }
        if (index->rd_index->indkey.values[0] != 0)
            check->column_name = get_attname(check->heap_oid, index->rd_index->indkey.values[0], false);
    }
    check->expression = index->rd_index->indkey.values[0] == 0;
    if (!check->expression) {
        check->column_type = TupleDescAttr(RelationGetDescr(index), 0)->atttypid;
        return;
    }
    Bitmapset *columns = nullptr;
    pull_varattnos(reinterpret_cast<Node *>(RelationGetIndexExpressions(index)), 1, &columns);
    const int member = bms_num_members(columns) == 1 ? bms_next_member(columns, -1) : -1;
    if (member < 0 || member + FirstLowInvalidHeapAttributeNumber <= 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("bloom_index_contains needs an index on one column or on an "
                               "expression of one column; \"%s\" is not",
                               RelationGetRelationName(index))));
    check->column = AttrNumber(member + FirstLowInvalidHeapAttributeNumber);
    Relation heap = table_open(check->heap_oid, AccessShareLock);
    check->heap_owner = heap->rd_rel->relowner;
    // A copy: the relation's own descriptor is reference-counted per transaction.
    TupleDesc descriptor = CreateTupleDescCopy(RelationGetDescr(heap));
    table_close(heap, NoLock);
    check->column_type = TupleDescAttr(descriptor, check->column - 1)->atttypid;
    check->index_info = BuildIndexInfo(index);
    check->estate = CreateExecutorState();
    check->slot = MakeSingleTupleTableSlot(descriptor, &TTSOpsVirtual);
}

IndexCheck *index_check(Relation index) {
    if (index_checks == nullptr) {
        HASHCTL control{};
        control.keysize = sizeof(Oid);
        control.entrysize = sizeof(IndexCheck);
        control.hcxt = CacheMemoryContext;
        index_checks = hash_create("bloomfilter index checks", 16, &control,
                                   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
        CacheRegisterRelcacheCallback(invalidate_index_checks, (Datum)0);
    }
    const Oid index_oid = RelationGetRelid(index);
    bool found;
    IndexCheck *check =
        static_cast<IndexCheck *>(hash_search(index_checks, &index_oid, HASH_FIND, &found));
    if (found && check->valid) return check;
    if (found) forget_index_check(check);
    check = static_cast<IndexCheck *>(hash_search(index_checks, &index_oid, HASH_ENTER, &found));
    memset(reinterpret_cast<char *>(check) + sizeof(Oid), 0, sizeof(IndexCheck) - sizeof(Oid));
    check->context = AllocSetContextCreate(CacheMemoryContext, "bloomfilter index check",
                                           ALLOCSET_SMALL_SIZES);
    MemoryContext previous = MemoryContextSwitchTo(check->context);
    PG_TRY();
    {
        prepare_index_check(check, index);
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(previous);
        forget_index_check(check);
        PG_RE_THROW();
    }
    PG_END_TRY();
    MemoryContextSwitchTo(previous);
    check->valid = true;
    return check;
}

// Answers reveal whether a value is in the indexed columns: the caller needs SELECT on them,
// and a table with row-level security is refused (the filter would answer for every tenant's
// rows) unless the caller bypasses it. Checked on every call: privileges can change between
// statements.
void check_may_read(Relation index, const IndexCheck *check, const char *function) {
    const Oid user = GetUserId();
    if (check_enable_rls(check->heap_oid, InvalidOid, false) == RLS_ENABLED)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("%s cannot read index \"%s\": table \"%s\" has row-level security",
                        function, RelationGetRelationName(index), get_rel_name(check->heap_oid)),
                 errhint("Only a role that bypasses row-level security can check this index.")));
    if (pg_class_aclcheck(check->heap_oid, user, ACL_SELECT) == ACLCHECK_OK) return;
    for (int member = -1; (member = bms_next_member(check->columns, member)) >= 0;) {
        const AttrNumber column = AttrNumber(member + FirstLowInvalidHeapAttributeNumber);
        if (pg_attribute_aclcheck(check->heap_oid, column, user, ACL_SELECT) != ACLCHECK_OK)
            ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                            errmsg("permission denied for table %s", get_rel_name(check->heap_oid)),
                            errdetail("%s reads index \"%s\", which needs SELECT on the columns it indexes.",
                                      function, RelationGetRelationName(index))));
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

// The partition of `table` (partitioned) that rows with this value of the indexed column go to:
// 1 and the partition in *partition, 0 when no partition takes the value, -1 when the partition
// key is not the indexed column alone (any partition may hold the value).
int route_value(const IndexCheck *check, Relation table, Datum column_value, Oid *partition) {
    PartitionKey key = RelationGetPartitionKey(table);
    if (check->column_name == nullptr || key->partnatts != 1 || key->partattrs[0] == 0) return -1;
    const char *key_column = get_attname(RelationGetRelid(table), key->partattrs[0], false);
    if (strcmp(key_column, check->column_name) != 0) return -1;
    PartitionDesc desc = RelationGetPartitionDesc(table, false);
    PartitionBoundInfo bounds = desc->boundinfo;
    if (desc->nparts == 0 || bounds == nullptr) return 0;
    int part = -1;
    bool equal = false;
    switch (get_partition_strategy(key)) {
        case PARTITION_STRATEGY_HASH: {
            bool isnull = false;
            const uint64 hash = compute_partition_hash_value(key->partnatts, key->partsupfunc,
                                                             key->partcollation, &column_value, &isnull);
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
        default:
            return -1;
    }
    if (part < 0) part = bounds->default_index;
    if (part < 0) return 0;
    *partition = desc->oids[part];
    return 1;
}

// Whether a partition's index, under the partitioned index `index` of `table`, may hold the key:
// only the partition the value routes to is visited when the partition key is the indexed
// column, every partition otherwise.
bool partitions_contain(const IndexCheck *check, Oid table, Oid index, Datum column_value, KeyHash h) {
    Oid routed = InvalidOid;
    if (check->column_name != nullptr) {
        Relation parent = table_open(table, AccessShareLock);
        const int routes = route_value(check, parent, column_value, &routed);
        table_close(parent, NoLock);
        if (routes == 0) return false;
    }
    for (;;) {
        bool visited = false;
        ListCell *cell;
        foreach (cell, check->parts) {
            const PartIndex *part = static_cast<const PartIndex *>(lfirst(cell));
            if (part->parent_index != index || (OidIsValid(routed) && part->table != routed)) continue;
            visited = true;
            bool present;
            if (part->leaf) {
                Relation leaf = index_open(part->index, AccessShareLock);
                check_valid(leaf);
                present = index_contains(leaf, h);
                index_close(leaf, NoLock);
            } else {
                present = partitions_contain(check, part->table, part->index, column_value, h);
            }
            if (present || OidIsValid(routed)) return present;
        }
        // The partition the value routes to has no index under this one (it is being attached
        // or detached): every partition is visited instead.
        if (!OidIsValid(routed) || visited) return false;
        routed = InvalidOid;
    }
}

}  // namespace

// bloom_index_contains(index, value): false when no row of the index's table has that key
// (for an expression index: that the expression gives for the value); true when one probably
// does. NULL when the expression gives NULL.
extern "C" Datum bloom_index_contains(PG_FUNCTION_ARGS) {
    const Oid index_oid = PG_GETARG_OID(0);
    const Datum value = PG_GETARG_DATUM(1);
    const Oid value_type = get_fn_expr_argtype(fcinfo->flinfo, 1);
    Relation index = open_bloomfilter_index(index_oid);
    IndexCheck *check = index_check(index);
    check_may_read(index, check, "bloom_index_contains");
    if (key_family(value_type) != key_family(check->column_type) ||
        key_family(value_type) == KeyFamily::other)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("index \"%s\" has keys of type %s, not %s",
                               RelationGetRelationName(index), format_type_be(check->column_type),
                               format_type_be(value_type))));
    KeyHash h;
    if (!check->expression) {
        // The value's bytes are those the column's value would have (an integer is hashed as
        // the bigint of the same value).
        h = hash_key(value, key_kind_of(value_type), kFormatVersion2);
    } else {
        Datum column_value;
        if (!value_as_column(value, value_type, check->column_type, &column_value)) {
            index_close(index, NoLock);
            PG_RETURN_BOOL(false);
        }
        TupleTableSlot *slot = check->slot;
        ExecClearTuple(slot);
        for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++) {
            slot->tts_values[i] = (Datum)0;
            slot->tts_isnull[i] = true;
        }
        slot->tts_values[check->column - 1] = column_value;
        slot->tts_isnull[check->column - 1] = false;
        ExecStoreVirtualTuple(slot);
        ExprContext *econtext = GetPerTupleExprContext(check->estate);
        econtext->ecxt_scantuple = slot;
        Datum key;
        bool key_is_null;
        // The expression's functions are the table owner's code: they run as the owner, in a
        // security-restricted operation, as PostgreSQL runs them for REINDEX or VACUUM, never
        // with the caller's rights.
        Oid caller;
        int security_context;
        GetUserIdAndSecContext(&caller, &security_context);
        SetUserIdAndSecContext(check->heap_owner, security_context | SECURITY_RESTRICTED_OPERATION);
        const int guc_level = NewGUCNestLevel();
#if PG_VERSION_NUM >= 170000
        RestrictSearchPath();
#endif
        MemoryContext previous = MemoryContextSwitchTo(GetPerTupleMemoryContext(check->estate));
        FormIndexDatum(check->index_info, slot, check->estate, &key, &key_is_null);
        MemoryContextSwitchTo(previous);
        AtEOXact_GUC(false, guc_level);
        SetUserIdAndSecContext(caller, security_context);
        if (key_is_null) {
            ResetPerTupleExprContext(check->estate);
            index_close(index, NoLock);
            PG_RETURN_NULL();
        }
        h = index_key_hash(index, key);
        ResetPerTupleExprContext(check->estate);
    }
    bool present;
    if (!check->partitioned) {
        present = index_contains(index, h);
    } else {
        Datum column_value = value;
        // No row of the column's type can hold an integer out of its range.
        present = (check->expression || value_as_column(value, value_type, check->column_type, &column_value)) &&
                  partitions_contain(check, check->heap_oid, check->index_oid, column_value, h);
    }
    index_close(index, NoLock);
    PG_RETURN_BOOL(present);
}

namespace {

// An index with a filter of its own (not a partitioned one) that the caller may read.
Relation open_filter_index(Oid index_oid, const char *function) {
    Relation index = open_bloomfilter_index(index_oid);
    if (index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("\"%s\" is a partitioned index, which has no filter of its own",
                               RelationGetRelationName(index)),
                        errhint("Read the index of each partition.")));
    check_may_read(index, index_check(index), function);
    return index;
}

struct ChangesOutput {
    ReturnSetInfo *result;
    XLogRecPtr next;
};

void emit_change(void *arg, uint64_t offset, const uint8_t *bytes, uint32_t length) {
    const ChangesOutput *out = static_cast<const ChangesOutput *>(arg);
    bytea *value = static_cast<bytea *>(palloc(VARHDRSZ + length));
    SET_VARSIZE(value, VARHDRSZ + length);
    memcpy(VARDATA(value), bytes, length);
    Datum values[3] = {LSNGetDatum(out->next), Int64GetDatum(int64(offset)), PointerGetDatum(value)};
    bool nulls[3] = {false, false, false};
    tuplestore_putvalues(out->result->setResult, out->result->setDesc, values, nulls);
    pfree(value);
}

void emit_page_change(void *arg, uint64_t begin, const uint8_t *bytes, uint32_t length) {
    emit_change(arg, kHeaderBytes + begin, bytes, length);
}

}  // namespace

// bloom_index_changes(index, since): what changed in the index's filter after WAL position
// `since`, as rows (next_lsn, byte_offset, bytes): write `bytes` at `byte_offset` of a copy of
// the filter's byte format to bring it up to date. The first row is always the header (offset
// 0; parameters that differ from the copy's mean the index was rebuilt: read it whole again),
// and next_lsn, the same on every row, is the `since` of the next call. It is taken before the
// pages are read, so a change made while they are read is returned now or next time, never
// lost.
extern "C" Datum bloom_index_changes(PG_FUNCTION_ARGS) {
    const XLogRecPtr since = PG_GETARG_LSN(1);
    Relation index = open_filter_index(PG_GETARG_OID(0), "bloom_index_changes");
    ChangesOutput out;
    out.next = RecoveryInProgress() ? GetXLogReplayRecPtr(nullptr) : GetXLogInsertRecPtr();
    InitMaterializedSRF(fcinfo, 0);
    out.result = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    const IndexLayout &layout = index_layout(index);
    uint8_t header[kHeaderBytes];
    write_header(layout.parameters, header);
    write_inserted(header, layout.inserted_by_build);
    emit_change(&out, 0, header, kHeaderBytes);
    changed_pages(index, since, emit_page_change, &out);
    index_close(index, NoLock);
    return (Datum)0;
}

// bloom_index_filter(index): the index's filter as a bloom value, the same byte format as the
// type's (format version 2), so every bloom function and any reader of the format can use it.
// `inserted` counts the keys the build added.
extern "C" Datum bloom_index_filter(PG_FUNCTION_ARGS) {
    Relation index = open_filter_index(PG_GETARG_OID(0), "bloom_index_filter");
    const IndexLayout &layout = index_layout(index);
    struct varlena *result = make_filter(layout.parameters);
    write_inserted(bloom_bytes(result), layout.inserted_by_build);
    copy_index_bits(index, bloom_bytes(result) + kHeaderBytes);
    index_close(index, NoLock);
    PG_RETURN_POINTER(result);
}
