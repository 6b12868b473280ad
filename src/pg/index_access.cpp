// What a check of a bloomfilter index needs of it, and who may read it (see index_access.hpp).
#include "index_access.hpp"

extern "C" {
#include "access/genam.h"
#include "access/xact.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_language.h"
#include "catalog/pg_partitioned_table.h"
#include "catalog/pg_proc.h"
#include "access/transam.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/varlena.h"
#include "storage/lmgr.h"
#include "storage/sinval.h"
}

namespace bloomfilter {

namespace {

HTAB *index_checks;

// Moves on at every change to a function, a role or a role's memberships in this backend's
// catalog caches: another session's, taken in with its invalidations, or this transaction's own,
// one a rolled-back subtransaction undid included. A privilege found before holds until it moves.
uint64 privileges_generation = 1;

void privileges_changed(Datum, int, uint32) { privileges_generation++; }

// REINDEX CONCURRENTLY gives the old index the name `<name>_ccold` (then `_ccold1` ...) when it
// swaps it with the new one, marks it not valid, and later not ready (no longer maintained).
bool replaced_by_reindex(Relation index) {
    const char *suffix = strstr(RelationGetRelationName(index), "_ccold");
    if (suffix == nullptr) return false;
    for (suffix += strlen("_ccold"); *suffix != '\0'; suffix++)
        if (*suffix < '0' || *suffix > '9') return false;
    return true;
}

}  // namespace

// An index that is not valid may miss keys: one being built by CREATE INDEX CONCURRENTLY (or
// left by a failed one), or a partitioned index some partition has no index for. Its "absent"
// could be wrong, so it answers nothing.
void check_valid(Relation index) {
    if (!index->rd_index->indisvalid && replaced_by_reindex(index))
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("bloomfilter index \"%s\" was replaced by REINDEX CONCURRENTLY",
                               RelationGetRelationName(index)),
                        errdetail("The index was named by its OID (a regclass), resolved when the "
                                  "statement was parsed, before the replacement."),
                        errhint("Retry the transaction; pass the index's name as text to have it "
                                "resolved at each call.")));
    if (!index->rd_index->indisvalid)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("bloomfilter index \"%s\" is not valid", RelationGetRelationName(index)),
                 errdetail("It is being built or dropped concurrently, or was left by a failed "
                           "CREATE INDEX CONCURRENTLY, or a partition has no index attached to "
                           "it, and may miss keys."),
                 errhint("Wait for the build to finish, REINDEX it, or attach an index to "
                         "every partition.")));
}

void check_partitions_indexed(Relation index, const IndexCheck *check) {
    if (OidIsValid(check->unindexed_partition))
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("bloomfilter index \"%s\" is not valid", RelationGetRelationName(index)),
                 errdetail("Partition \"%s\" has no index under it (a foreign table cannot have "
                           "one), and the filter may miss its keys.",
                           get_rel_name(check->unindexed_partition)),
                 errhint("Check the other partitions' indexes, and query that partition itself.")));
}

// The table is locked before its index, as an index scan does (and amcheck): REINDEX, DROP
// INDEX and DETACH PARTITION CONCURRENTLY wait for the lockers of the table before they stop
// maintaining an index. Then the invalidations other sessions sent are taken in, even when this
// transaction held both locks already (a new lock takes them in, one held does not): on a hot
// standby nothing waits for this transaction's locks, and the index's state must be the one the
// primary committed last, not the one this transaction first saw.
Relation open_bloomfilter_index(Oid index_oid, Oid heap_oid) {
    if (!OidIsValid(heap_oid)) heap_oid = IndexGetRelation(index_oid, true);
    if (OidIsValid(heap_oid)) LockRelationOid(heap_oid, AccessShareLock);
    Relation index = try_relation_open(index_oid, AccessShareLock);
    if (index == nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE),
                 errmsg("relation with OID %u does not exist", index_oid),
                 errhint("An index's OID (a regclass) is resolved when the statement is "
                         "parsed; pass its name as text to have it resolved at each call.")));
    AcceptInvalidationMessages();
    if (!is_bloomfilter_index(index))
        ereport(ERROR,
                (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                 errmsg("\"%s\" is not a bloomfilter index", RelationGetRelationName(index))));
    // The table of an index never changes; a different one means the OID was reused meanwhile.
    if (!OidIsValid(heap_oid) || heap_oid != index->rd_index->indrelid)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("could not open the table of index \"%s\"",
                               RelationGetRelationName(index))));
    Assert(CheckRelationOidLockedByMe(heap_oid, AccessShareLock, true));
    check_valid(index);
    return index;
}

namespace {

// The table of the index a name resolves to is locked before the index, as
// RangeVarGetRelidExtended calls this before it locks what the name resolved to, and again each
// time the name resolves to another relation.
struct NameLock {
    Oid heap_oid;
};

void lock_table_first(const RangeVar *, Oid relation, Oid previous, void *arg) {
    NameLock *locked = static_cast<NameLock *>(arg);
    if (relation != previous && OidIsValid(locked->heap_oid)) {
        UnlockRelationOid(locked->heap_oid, AccessShareLock);
        locked->heap_oid = InvalidOid;
    }
    if (!OidIsValid(relation) || OidIsValid(locked->heap_oid)) return;
    // Not an index: open_bloomfilter_index says so.
    const Oid heap = IndexGetRelation(relation, true);
    if (!OidIsValid(heap)) return;
    LockRelationOid(heap, AccessShareLock);
    locked->heap_oid = heap;
}

}  // namespace

Oid resolve_index_name(text *name, Oid *heap_oid, ResolvedName **remembered,
                       MemoryContext context) {
    // What other sessions committed before this call, as a SELECT that names a table sees it;
    // then RangeVarGetRelidExtended takes in those that arrive while it locks.
    AcceptInvalidationMessages();
    const int length = VARSIZE_ANY_EXHDR(name);
    ResolvedName *last = *remembered;
    // The name resolved last time still means the same index when nothing it depends on can have
    // changed since: no invalidation taken in (another session's catalog change, a standby's
    // replayed one), no command of this transaction (its own), the same role and search_path, and
    // both locks still held (a rolled-back subtransaction releases those it took).
    if (last != nullptr && last->invalidations == SharedInvalidMessageCounter &&
        last->transaction == local_transaction_id() &&
        last->command == GetCurrentCommandId(false) && last->user == GetUserId() &&
        last->length == length && memcmp(last->name, VARDATA_ANY(name), length) == 0 &&
        search_path_unchanged(last->search_path) &&
        CheckRelationOidLockedByMe(last->heap_oid, AccessShareLock, true) &&
        CheckRelationOidLockedByMe(last->index_oid, AccessShareLock, true)) {
        *heap_oid = last->heap_oid;
        return last->index_oid;
    }
    RangeVar *relation = makeRangeVarFromNameList(textToQualifiedNameList(name));
    NameLock locked{InvalidOid};
    const Oid index_oid =
        RangeVarGetRelidExtended(relation, AccessShareLock, 0, lock_table_first, &locked);
    *heap_oid = locked.heap_oid;
    if (last == nullptr) {
        last = static_cast<ResolvedName *>(MemoryContextAllocZero(context, sizeof(ResolvedName)));
        last->memory =
            AllocSetContextCreate(context, "bloomfilter index name", ALLOCSET_SMALL_SIZES);
        *remembered = last;
    } else {
        MemoryContextReset(last->memory);
    }
    last->search_path = search_path_now(last->memory);
    last->name = static_cast<char *>(MemoryContextAlloc(last->memory, length + 1));
    memcpy(last->name, VARDATA_ANY(name), length);
    last->length = length;
    last->invalidations = SharedInvalidMessageCounter;
    last->transaction = local_transaction_id();
    last->command = GetCurrentCommandId(false);
    last->user = GetUserId();
    last->index_oid = index_oid;
    last->heap_oid = locked.heap_oid;
    return index_oid;
}

// The index's expressions or predicate as stored in pg_index. Not the relcache's copies: those
// have SQL functions inlined, their bodies parsed with the search_path of whoever loaded them in
// this backend, a caller who may have put a schema of its own first. The expressions are planned
// when first evaluated, as the table's owner with a safe search_path (bloom_index_contains).
Node *stored_index_expression(Relation index, AttrNumber attribute) {
    bool isnull;
    const Datum stored = SysCacheGetAttr(INDEXRELID, index->rd_indextuple, attribute, &isnull);
    if (isnull) return nullptr;
    Node *node = static_cast<Node *>(stringToNode(TextDatumGetCString(stored)));
    fix_opfuncids(node);
    return node;
}

namespace {

// Whether `relid` is one of a partitioned index's descendants or their tables: a partition
// created, attached or detached at any level invalidates the table it is a partition of.
bool among_parts(const IndexCheck *check, Oid relid) {
    ListCell *cell;
    foreach (cell, check->parts) {
        const PartIndex *part = static_cast<const PartIndex *>(lfirst(cell));
        if (part->index == relid || part->table == relid) return true;
    }
    return false;
}

// Called inside invalidation processing, which can happen while a check is in use: it only
// marks, and index_check() frees.
void invalidate_index_checks(Datum, Oid relid) {
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, index_checks);
    for (IndexCheck *check; (check = static_cast<IndexCheck *>(hash_seq_search(&scan))) != nullptr;)
        if (relid == InvalidOid || check->index_oid == relid || check->heap_oid == relid ||
            among_parts(check, relid))
            check->valid = false;
}

void forget_index_check(IndexCheck *check) {
    if (check->estate != nullptr) FreeExecutorState(check->estate);
    if (check->context != nullptr) MemoryContextDelete(check->context);
    const Oid key = check->index_oid;
    hash_search(index_checks, &key, HASH_REMOVE, nullptr);
}

// Frees what was kept for indexes changed or dropped since (the invalidation callback only
// marks them), but for a check in use.
void forget_invalid_checks() {
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, index_checks);
    for (IndexCheck *check; (check = static_cast<IndexCheck *>(hash_seq_search(&scan))) != nullptr;)
        if (!check->valid && !check->in_use) forget_index_check(check);
}

// The index's table's columns it reads: key columns, and those of its expressions and predicate
// (as offsets by FirstLowInvalidHeapAttributeNumber, as pull_varattnos gives them).
Bitmapset *index_columns(Relation index) {
    Bitmapset *columns = nullptr;
    for (int i = 0; i < index->rd_index->indnatts; i++)
        if (index->rd_index->indkey.values[i] != 0)
            columns = bms_add_member(
                columns, index->rd_index->indkey.values[i] - FirstLowInvalidHeapAttributeNumber);
    pull_varattnos(stored_index_expression(index, Anum_pg_index_indexprs), 1, &columns);
    pull_varattnos(stored_index_expression(index, Anum_pg_index_indpred), 1, &columns);
    return columns;
}

// Which of the index's key columns (`columns`: their names, null for an expression) a
// partitioned table's partition key is alone, or -1 (by name: a partition's columns may lie in
// another order).
int routed_by(Oid table, const List *columns) {
    HeapTuple tuple = SearchSysCache1(PARTRELID, ObjectIdGetDatum(table));
    if (!HeapTupleIsValid(tuple)) return -1;
    const auto *form = reinterpret_cast<Form_pg_partitioned_table>(GETSTRUCT(tuple));
    AttrNumber attnum = form->partnatts == 1 ? form->partattrs.values[0] : 0;
    // Routing calls the partition key's operator class's support function as the caller: only
    // one built into PostgreSQL, never code of the table's owner.
    bool isnull;
    const Datum classes =
        SysCacheGetAttr(PARTRELID, tuple, Anum_pg_partitioned_table_partclass, &isnull);
    if (isnull ||
        reinterpret_cast<oidvector *>(DatumGetPointer(classes))->values[0] >= FirstUnpinnedObjectId)
        attnum = 0;
    ReleaseSysCache(tuple);
    // The partition is not locked: dropped meanwhile, it has no column, and is not routed to.
    const char *name = attnum != 0 ? get_attname(table, attnum, true) : nullptr;
    if (name == nullptr) return -1;
    for (int i = 0; i < list_length(columns); i++) {
        const char *column = static_cast<const char *>(list_nth(columns, i));
        if (column != nullptr && strcmp(name, column) == 0) return i;
    }
    return -1;
}

void prepare_index_check(IndexCheck *check, Relation index) {
    check->heap_oid = index->rd_index->indrelid;
    check->columns = index_columns(index);
    check->partitioned = index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX;
    if (check->partitioned) {
        List *columns = NIL;
        for (int i = 0; i < index->rd_index->indnkeyatts; i++) {
            const AttrNumber indexed = index->rd_index->indkey.values[i];
            columns = lappend(
                columns, indexed != 0 ? get_attname(check->heap_oid, indexed, false) : nullptr);
        }
        check->routed_by = routed_by(check->heap_oid, columns);
        // Each partitioned index with its table.
        List *pending = list_make1_oid(check->index_oid);
        List *pending_tables = list_make1_oid(check->heap_oid);
        while (pending != NIL) {
            const Oid parent = linitial_oid(pending);
            const Oid parent_table = linitial_oid(pending_tables);
            pending = list_delete_first(pending);
            pending_tables = list_delete_first(pending_tables);
            List *indexed = NIL;
            ListCell *cell;
            // Not locked here: a check locks the partitions' indexes it reads, and only those.
            foreach (cell, find_inheritance_children(parent, NoLock)) {
                const Oid table = IndexGetRelation(lfirst_oid(cell), true);
                if (!OidIsValid(table)) continue;
                indexed = lappend_oid(indexed, table);
                PartIndex *part = static_cast<PartIndex *>(palloc(sizeof(PartIndex)));
                part->index = lfirst_oid(cell);
                part->table = table;
                part->parent_index = parent;
                part->leaf = get_rel_relkind(part->index) != RELKIND_PARTITIONED_INDEX;
                part->routed_by = part->leaf ? -1 : routed_by(table, columns);
                check->parts = lappend(check->parts, part);
                if (!part->leaf) {
                    pending = lappend_oid(pending, part->index);
                    pending_tables = lappend_oid(pending_tables, table);
                }
            }
            // A partition with no index under this one (a foreign table: CREATE INDEX skips
            // them, and the index is valid without it) holds rows the filter never saw.
            foreach (cell, find_inheritance_children(parent_table, NoLock))
                if (!OidIsValid(check->unindexed_partition) &&
                    !list_member_oid(indexed, lfirst_oid(cell)))
                    check->unindexed_partition = lfirst_oid(cell);
        }
    }
    check->expression = index->rd_index->indkey.values[0] == 0;
    // A domain's values are its base type's: hashed and routed as those.
    if (!check->expression) {
        check->column_type = getBaseType(TupleDescAttr(RelationGetDescr(index), 0)->atttypid);
        return;
    }
    Node *expressions = stored_index_expression(index, Anum_pg_index_indexprs);
    Bitmapset *columns = nullptr;
    pull_varattnos(expressions, 1, &columns);
    const int member = bms_num_members(columns) == 1 ? bms_next_member(columns, -1) : -1;
    // An expression of several columns: bloom_index_contains refuses it, the filter is readable.
    if (member < 0 || member + FirstLowInvalidHeapAttributeNumber <= 0) return;
    check->column = AttrNumber(member + FirstLowInvalidHeapAttributeNumber);
    Relation heap = table_open(check->heap_oid, AccessShareLock);
    check->heap_owner = heap->rd_rel->relowner;
    // A copy: the relation's own descriptor is reference-counted per transaction.
    TupleDesc descriptor = CreateTupleDescCopy(RelationGetDescr(heap));
    table_close(heap, NoLock);
    check->column_type = getBaseType(TupleDescAttr(descriptor, check->column - 1)->atttypid);
    check->built_in_expression = expression_is_built_in(expressions);
    add_executed_functions(expressions, &check->functions);
    // Not BuildIndexInfo(): it loads the relcache's copies of the expressions and predicate,
    // which the planner's constant folding makes as whoever loads them, here the caller, running
    // the owner's immutable functions with the caller's rights. FormIndexDatum needs the key's
    // column and expression alone, and plans the expression when first evaluated, as the owner.
    check->index_info = makeNode(IndexInfo);
    check->index_info->ii_NumIndexAttrs = 1;
    check->index_info->ii_NumIndexKeyAttrs = 1;
    check->index_info->ii_IndexAttrNumbers[0] = 0;
    check->index_info->ii_Expressions = reinterpret_cast<List *>(expressions);
    check->estate = CreateExecutorState();
    check->slot = MakeSingleTupleTableSlot(descriptor, &TTSOpsVirtual);
}

}  // namespace

IndexCheck *index_check(Relation index) {
    if (index_checks == nullptr) {
        HASHCTL control{};
        control.keysize = sizeof(Oid);
        control.entrysize = sizeof(IndexCheck);
        control.hcxt = CacheMemoryContext;
        index_checks = hash_create("bloomfilter index checks", 16, &control,
                                   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
        CacheRegisterRelcacheCallback(invalidate_index_checks, (Datum)0);
        CacheRegisterSyscacheCallback(PROCOID, privileges_changed, (Datum)0);
        CacheRegisterSyscacheCallback(AUTHOID, privileges_changed, (Datum)0);
        CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, privileges_changed, (Datum)0);
    }
    const Oid index_oid = RelationGetRelid(index);
    bool found;
    IndexCheck *check =
        static_cast<IndexCheck *>(hash_search(index_checks, &index_oid, HASH_FIND, &found));
    if (found && check->in_use)
        ereport(
            ERROR,
            (errcode(ERRCODE_OBJECT_IN_USE),
             errmsg(
                 "bloomfilter index \"%s\" cannot be read by the functions of its own expression",
                 RelationGetRelationName(index))));
    if (found && check->valid) return check;
    forget_invalid_checks();
    check = static_cast<IndexCheck *>(hash_search(index_checks, &index_oid, HASH_ENTER, &found));
    memset(reinterpret_cast<char *>(check) + sizeof(Oid), 0, sizeof(IndexCheck) - sizeof(Oid));
    check->context =
        AllocSetContextCreate(CacheMemoryContext, "bloomfilter index check", ALLOCSET_SMALL_SIZES);
    // Valid from the start, so that an invalidation that arrives while it is prepared (a
    // partition created meanwhile) marks it to be prepared again by the next check.
    check->valid = true;
    check->in_use = true;
    MemoryContext previous = MemoryContextSwitchTo(check->context);
    PG_TRY();
    { prepare_index_check(check, index); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(previous);
        forget_index_check(check);
        PG_RE_THROW();
    }
    PG_END_TRY();
    MemoryContextSwitchTo(previous);
    check->in_use = false;
    return check;
}

namespace {

// Types and functions defined in PostgreSQL's own catalog files (pg_type.dat, pg_proc.dat) have
// OIDs below FirstUnpinnedObjectId: nothing a role created, nor what initdb ran as SQL.
bool built_in_type(Oid type) {
    return OidIsValid(type) && type < FirstUnpinnedObjectId && get_typtype(type) != TYPTYPE_DOMAIN;
}

bool not_built_in_function(Oid function, void *) {
    if (!OidIsValid(function) || function >= FirstUnpinnedObjectId) return true;
    HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(function));
    if (!HeapTupleIsValid(tuple)) return true;
    const Oid language = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple))->prolang;
    ReleaseSysCache(tuple);
    // An SQL function's body is parsed when it runs, with the search_path of the moment.
    return language != INTERNALlanguageId && language != ClanguageId;
}

// True when the expression may run code that is not built in: the walker stops there.
bool runs_other_code(Node *node, void *context) {
    if (node == nullptr) return false;
    if (IsA(node, List)) return walk_expression(node, runs_other_code, context);
    // The column's value is given, not coerced: a domain column is read as its base type.
    if (IsA(node, Var)) return !built_in_type(getBaseType(reinterpret_cast<Var *>(node)->vartype));
    switch (nodeTag(node)) {
        case T_Const:
        case T_FuncExpr:
        case T_OpExpr:
        case T_DistinctExpr:
        case T_NullIfExpr:
        case T_ScalarArrayOpExpr:
        case T_BoolExpr:
        case T_RelabelType:
        case T_CoerceViaIO:
        case T_CollateExpr:
        case T_CaseExpr:
        case T_CaseTestExpr:
        case T_CoalesceExpr:
        case T_NullTest:
        case T_BooleanTest:
        case T_ArrayExpr: break;
        case T_CaseWhen: return walk_expression(node, runs_other_code, context);
        // A domain's constraints, a sub-query, a row type, anything else: not known to be safe.
        default: return true;
    }
    if (!built_in_type(exprType(node))) return true;
    if (check_functions_in_node(node, not_built_in_function, nullptr)) return true;
    return walk_expression(node, runs_other_code, context);
}

}  // namespace

bool expression_is_built_in(Node *expression) {
    return expression != nullptr && !runs_other_code(expression, nullptr);
}

namespace {

// The nodes whose function ExecInitExprRec checks EXECUTE on, before it builds their arguments.
bool collect_executed_functions(Node *node, void *context) {
    if (node == nullptr) return false;
    List **functions = static_cast<List **>(context);
    switch (nodeTag(node)) {
        case T_FuncExpr:
            *functions =
                list_append_unique_oid(*functions, reinterpret_cast<FuncExpr *>(node)->funcid);
            break;
        case T_OpExpr:
        case T_DistinctExpr:
        case T_NullIfExpr: {
            OpExpr *op = reinterpret_cast<OpExpr *>(node);
            set_opfuncid(op);
            *functions = list_append_unique_oid(*functions, op->opfuncid);
            break;
        }
        case T_ScalarArrayOpExpr: {
            ScalarArrayOpExpr *op = reinterpret_cast<ScalarArrayOpExpr *>(node);
            set_sa_opfuncid(op);
            *functions = list_append_unique_oid(*functions, op->opfuncid);
            break;
        }
        default: break;
    }
    return walk_expression(node, collect_executed_functions, context);
}

}  // namespace

void add_executed_functions(Node *expression, List **functions) {
    collect_executed_functions(expression, functions);
}

void check_execute(IndexCheck *check) {
    const Oid user = GetUserId();
    // The same role as last time, with nothing changed since: a few nanoseconds, not a catalog
    // look-up per function (unless a module, sepgsql say, wants to hear of each execution).
    if (check->executable_by == user && check->executable_generation == privileges_generation &&
        object_access_hook == nullptr)
        return;
    // Before the look-ups, which may take in invalidations: one taken in meanwhile moves it on.
    const uint64 generation = privileges_generation;
    ListCell *cell;
    foreach (cell, check->functions) {
        const Oid function = lfirst_oid(cell);
        const AclResult result = function_aclcheck(function, user, ACL_EXECUTE);
        if (result != ACLCHECK_OK) aclcheck_error(result, OBJECT_FUNCTION, get_func_name(function));
        InvokeFunctionExecuteHook(function);
    }
    check->executable_by = user;
    check->executable_generation = generation;
}

bool has_owner_privileges(Oid heap_owner) { return has_privs_of_role(GetUserId(), heap_owner); }

void check_may_maintain(Relation index, Oid heap_oid, const char *function) {
    const Oid user = GetUserId();
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(heap_oid));
    if (!HeapTupleIsValid(tuple)) elog(ERROR, "cache lookup failed for relation %u", heap_oid);
    const Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    if (has_privs_of_role(user, owner)) return;
#if PG_VERSION_NUM >= 170000
    if (pg_class_aclcheck(heap_oid, user, ACL_MAINTAIN) == ACLCHECK_OK) return;
#endif
    ereport(ERROR,
            (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
             errmsg("must be owner of table %s", get_rel_name(heap_oid)),
             errdetail("%s runs the expression or predicate of index \"%s\", the table owner's "
                       "code, as the owner: as for REINDEX, only the owner and its members may.",
                       function, RelationGetRelationName(index))));
}

AsOwner enter_as_owner(Oid owner) {
    AsOwner saved;
    GetUserIdAndSecContext(&saved.caller, &saved.security_context);
    SetUserIdAndSecContext(owner, saved.security_context | SECURITY_RESTRICTED_OPERATION);
    saved.guc_level = NewGUCNestLevel();
    restrict_search_path();
    return saved;
}

void leave_as_owner(const AsOwner &saved) {
    AtEOXact_GUC(false, saved.guc_level);
    SetUserIdAndSecContext(saved.caller, saved.security_context);
}

// Whether Citus lists the table in pg_catalog.pg_dist_partition: a distributed, reference or
// Citus local table, whose rows are in shards (tables of their own, with their own indexes), the
// table itself an empty shell. Read at every call, through its index when there is one.
bool citus_table(Oid heap_oid) {
    const Oid catalog = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
    if (!OidIsValid(catalog)) return false;
    const AttrNumber column = get_attnum(catalog, "logicalrelid");
    if (column == InvalidAttrNumber) return false;
    const Oid by_table =
        get_relname_relid("pg_dist_partition_logical_relid_index", PG_CATALOG_NAMESPACE);
    Relation relation = table_open(catalog, AccessShareLock);
    ScanKeyData key;
    // The table's column number: systable_beginscan gives an index scan the index's.
    ScanKeyInit(&key, column, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(heap_oid));
    SysScanDesc scan =
        systable_beginscan(relation, by_table, OidIsValid(by_table), nullptr, 1, &key);
    const bool listed = HeapTupleIsValid(systable_getnext(scan));
    systable_endscan(scan);
    table_close(relation, AccessShareLock);
    return listed;
}

// The index of a Citus table's shell holds none of its rows: its "absent" would be wrong for
// every key.
void check_not_distributed(Relation index, Oid heap_oid, const char *function) {
    if (!citus_table(heap_oid)) return;
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("%s cannot read index \"%s\": table \"%s\" is a Citus table", function,
                    RelationGetRelationName(index), get_rel_name(heap_oid)),
             errdetail("Its rows are in its shards, each with its own index; the index here is "
                       "of the table's shell, which holds no rows."),
             errhint("Check the index of the shard that holds the key on the node that holds "
                     "the shard: Citus names it \"%s_<shard id>\".",
                     RelationGetRelationName(index))));
}

// Answers reveal whether a value is in the indexed columns: the caller needs SELECT on them,
// and a table with row-level security is refused (the filter would answer for every tenant's
// rows) unless the caller bypasses it. Checked on every call: privileges can change between
// statements.
void check_may_read(Relation index, const IndexCheck *check, const char *function) {
    check_not_distributed(index, check->heap_oid, function);
    check_may_read_shards(index, check, function);
}

void check_may_read_shards(Relation index, const IndexCheck *check, const char *function) {
    const Oid user = GetUserId();
    // As a query of the table would need: USAGE on its schema (an OID reaches it without one).
    const Oid schema = get_rel_namespace(check->heap_oid);
    if (schema_aclcheck(schema, user, ACL_USAGE) != ACLCHECK_OK)
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied for schema %s", get_namespace_name(schema)),
                        errdetail("%s reads index \"%s\" of a table in that schema.", function,
                                  RelationGetRelationName(index))));
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
            ereport(
                ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("permission denied for table %s", get_rel_name(check->heap_oid)),
                 errdetail("%s reads index \"%s\", which needs SELECT on the columns it indexes.",
                           function, RelationGetRelationName(index))));
    }
}

}  // namespace bloomfilter
