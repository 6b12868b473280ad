// bloom_index_verify: checks that a bloomfilter index holds the key of every row of its table
// visible to the transaction's snapshot, as amcheck's heapallindexed checks a btree. Run after an
// incident (a crash, a restored backup, a replica promoted, damaged storage).
#include "index_access.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_verify);
}

namespace {

struct VerifyState {
    Relation heap;
    int64 rows;
};

void verify_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull, bool,
                     void *arg) {
    VerifyState *state = static_cast<VerifyState *>(arg);
    state->rows++;
    KeyHash h;
    if (!index_row_hash(index, values, isnull, &h)) return;  // NULL keys are never added
    if (!index_contains(index, h))
        ereport(
            ERROR,
            (errcode(ERRCODE_INDEX_CORRUPTED),
             errmsg("bloomfilter index \"%s\" lacks the key of row (%u,%u) of table \"%s\"",
                    RelationGetRelationName(index), ItemPointerGetBlockNumber(tid),
                    ItemPointerGetOffsetNumber(tid), RelationGetRelationName(state->heap)),
             errhint("REINDEX the index; the filter may answer \"absent\" for that row's key.")));
}

// The rows of one leaf index's table, under the transaction's snapshot.
int64 verify_leaf(Relation index) {
    // A partition's owner may differ from its parent's.
    check_may_maintain(index, index->rd_index->indrelid, "bloom_index_verify");
    Relation heap = table_open(index->rd_index->indrelid, AccessShareLock);
    Snapshot snapshot = RegisterSnapshot(GetTransactionSnapshot());
    // An index built while a row's older versions were alive (indcheckxmin) lacks their keys: a
    // snapshot older than the index could see them.
    if (index->rd_index->indcheckxmin &&
        !TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
                               snapshot->xmin))
        ereport(
            ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("bloomfilter index \"%s\" cannot be verified with this transaction's snapshot",
                    RelationGetRelationName(index)),
             errhint("Run bloom_index_verify in a new transaction.")));
    IndexInfo *info = makeNode(IndexInfo);
    const int columns = IndexRelationGetNumberOfKeyAttributes(index);
    info->ii_NumIndexAttrs = columns;
    info->ii_NumIndexKeyAttrs = columns;
    for (int i = 0; i < columns; i++)
        info->ii_IndexAttrNumbers[i] = index->rd_index->indkey.values[i];
    // As stored in pg_index, planned by the scan as the owner (see prepare_index_check).
    info->ii_Expressions =
        reinterpret_cast<List *>(stored_index_expression(index, Anum_pg_index_indexprs));
    Node *predicate = stored_index_expression(index, Anum_pg_index_indpred);
    info->ii_Predicate =
        predicate != nullptr ? make_ands_implicit(reinterpret_cast<Expr *>(predicate)) : NIL;
    info->ii_Concurrent = true;  // an MVCC snapshot's rows, as amcheck's heapallindexed
    VerifyState state{heap, 0};
    // The expression and predicate are the owner's code (enter_as_owner).
    const AsOwner saved = enter_as_owner(heap->rd_rel->relowner);
    TableScanDesc scan = table_beginscan_strat(heap, snapshot, 0, nullptr, true, true);
    table_index_build_scan(heap, index, info, true, false, verify_callback, &state, scan);
    leave_as_owner(saved);
    UnregisterSnapshot(snapshot);
    table_close(heap, NoLock);
    return state.rows;
}

struct Leaf {
    Oid index;
    Oid table;
};

}  // namespace

// bloom_index_verify(index): the number of rows whose key was checked (those the index covers,
// NULL keys included), or XX002 naming the first row whose key the filter lacks. For a
// partitioned index, every partition's index.
extern "C" Datum bloom_index_verify(PG_FUNCTION_ARGS) {
    Relation index = open_bloomfilter_index(PG_GETARG_OID(0));
    IndexCheck *check = index_check(index);
    check_may_maintain(index, check->heap_oid, "bloom_index_verify");
    check_may_read(index, check, "bloom_index_verify");
    int64 rows = 0;
    if (!check->partitioned) {
        rows = verify_leaf(index);
    } else {
        check_partitions_indexed(index, check);
        // A copy: the owner's code run by the scan may check other indexes, which can free what
        // this backend keeps for this one.
        Leaf *leaves = static_cast<Leaf *>(palloc(sizeof(Leaf) * (list_length(check->parts) + 1)));
        int count = 0;
        ListCell *cell;
        foreach (cell, check->parts) {
            const PartIndex *part = static_cast<const PartIndex *>(lfirst(cell));
            if (part->leaf) leaves[count++] = Leaf{part->index, part->table};
        }
        for (int i = 0; i < count; i++) {
            LockRelationOid(leaves[i].table, AccessShareLock);
            Relation leaf = try_relation_open(leaves[i].index, AccessShareLock);
            if (leaf == nullptr) continue;  // dropped since the partitions were listed
            check_valid(leaf);
            rows += verify_leaf(leaf);
            index_close(leaf, NoLock);
        }
        pfree(leaves);
    }
    index_close(index, NoLock);
    PG_RETURN_INT64(rows);
}
