// The bloomfilter index access method's callbacks: a maintained Bloom filter that PostgreSQL
// itself keeps current on every insert, in every code path (COPY, partitions, ATTACH PARTITION,
// rules, triggers), dropped with its table and logged in WAL (generic records) so that crash
// recovery and standbys have it. It answers no scan: it is read by bloom_index_contains and the
// other functions in index_contains.cpp and index_read.cpp. The build is in index_build.cpp, the
// reading and writing of pages in index_pages.cpp; the layout in index_pages.hpp.
#include "index_pages.hpp"

extern "C" {
#include "access/amapi.h"
#include "access/reloptions.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "commands/vacuum.h"
#include "storage/lmgr.h"
#include "utils/catcache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_handler);
}

namespace {

relopt_kind index_relopt_kind;

const relopt_parse_elt kOptionTable[] = {
    {"capacity", RELOPT_TYPE_INT, offsetof(IndexOptions, capacity)},
    {"error_rate", RELOPT_TYPE_REAL, offsetof(IndexOptions, error_rate)},
    {"expansion", RELOPT_TYPE_INT, offsetof(IndexOptions, expansion)},
};

bytea *bloom_am_options(Datum reloptions, bool validate) {
    IndexOptions *options = static_cast<IndexOptions *>(
        build_reloptions(reloptions, validate, index_relopt_kind, sizeof(IndexOptions),
                         kOptionTable, lengthof(kOptionTable)));
    if (options != nullptr && validate) {
        // The reloption's own range check includes 0 and 1.
        if (!(options->error_rate > 0.0 && options->error_rate < 1.0))
            report_parameters(Status::error_rate_out_of_range, options->capacity,
                              options->error_rate);
        const int64 capacity = options->capacity > 0 ? options->capacity : kDefaultCapacity;
        Parameters parameters;
        report_parameters(size_filter(uint64_t(capacity), options->error_rate, &parameters),
                          capacity, options->error_rate);
        if (options->expansion == 1)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("expansion must be 0 (a fixed size) or at least 2")));
    }
    return reinterpret_cast<bytea *>(options);
}

void bloom_am_build_empty(Relation index) {
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("bloomfilter indexes on unlogged tables are not supported")));
}

// The key's bits are set before the row can commit: no committed row is ever missing. The
// executor's index_unchanged is only a hint, from the columns an UPDATE names: a BEFORE trigger
// may have changed the key, so it is not trusted (an unchanged key's page is only read).
bool bloom_am_insert(Relation index, Datum *values, bool *isnull, ItemPointer, Relation,
                     IndexUniqueCheck, bool, IndexInfo *) {
    Assert(CheckRelationLockedByMe(index, RowExclusiveLock, true));
    KeyHash h;
    if (index_row_hash(index, values, isnull, &h)) add_key(index, h);
    return false;
}

// A Bloom filter cannot forget a key: VACUUM removes nothing from it. bloom_index_info tells
// when deletes have left it fuller than the table needs (then REINDEX).
IndexBulkDeleteResult *bloom_am_bulk_delete(IndexVacuumInfo *, IndexBulkDeleteResult *stats,
                                            IndexBulkDeleteCallback, void *) {
    if (stats == nullptr)
        stats = static_cast<IndexBulkDeleteResult *>(palloc0(sizeof(IndexBulkDeleteResult)));
    return stats;
}

IndexBulkDeleteResult *bloom_am_vacuum_cleanup(IndexVacuumInfo *info,
                                               IndexBulkDeleteResult *stats) {
    if (info->analyze_only) return stats;
    if (stats == nullptr)
        stats = static_cast<IndexBulkDeleteResult *>(palloc0(sizeof(IndexBulkDeleteResult)));
    stats->num_pages = RelationGetNumberOfBlocks(info->index);
    stats->num_index_tuples = info->num_heap_tuples;
    stats->estimated_count = info->estimated_count;
    return stats;
}

// No scan can use the index (it has neither amgettuple nor amgetbitmap), so the planner never
// asks; if it did, the answer is "never".
void bloom_am_cost_estimate(struct PlannerInfo *, struct IndexPath *, double, Cost *startup_cost,
                            Cost *total_cost, Selectivity *selectivity, double *correlation,
                            double *pages) {
    *startup_cost = 1.0e10;
    *total_cost = 1.0e10;
    *selectivity = 1.0;
    *correlation = 0.0;
    *pages = 0.0;
}

// An operator class has one support function, number 1: the key's 64-bit hash as bigint, from
// one argument of the class's type (or one it is binary-coercible to).
bool bloom_am_validate(Oid opclass_oid) {
    HeapTuple class_tuple = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass_oid));
    if (!HeapTupleIsValid(class_tuple))
        elog(ERROR, "cache lookup failed for operator class %u", opclass_oid);
    const Form_pg_opclass opclass = reinterpret_cast<Form_pg_opclass>(GETSTRUCT(class_tuple));
    const Oid family = opclass->opcfamily, input_type = opclass->opcintype;
    const char *name = pstrdup(NameStr(opclass->opcname));
    ReleaseSysCache(class_tuple);
    bool valid = true, has_hash = false;
    CatCList *procs = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(family));
    for (int i = 0; i < procs->n_members; i++) {
        const Form_pg_amproc proc =
            reinterpret_cast<Form_pg_amproc>(GETSTRUCT(&procs->members[i]->tuple));
        if (proc->amproclefttype != input_type) continue;
        if (proc->amprocnum != 1 || get_func_rettype(proc->amproc) != INT8OID ||
            get_func_nargs(proc->amproc) != 1) {
            ereport(INFO,
                    (errmsg("bloomfilter operator class \"%s\" has an invalid support function %d",
                            name, proc->amprocnum)));
            valid = false;
        } else {
            has_hash = true;
        }
    }
    ReleaseSysCacheList(procs);
    if (!has_hash) {
        ereport(INFO,
                (errmsg("bloomfilter operator class \"%s\" has no support function 1", name)));
        valid = false;
    }
    return valid;
}

IndexScanDesc bloom_am_begin_scan(Relation index, int, int) {
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("bloomfilter index \"%s\" cannot be scanned", RelationGetRelationName(index)),
             errhint("Check values with bloom_index_contains().")));
    return nullptr;
}
void bloom_am_rescan(IndexScanDesc, ScanKey, int, ScanKey, int) {}
void bloom_am_end_scan(IndexScanDesc) {}

}  // namespace

namespace bloomfilter {

bool index_row_hash(Relation index, const Datum *values, const bool *isnull, KeyHash *h) {
    const int columns = IndexRelationGetNumberOfKeyAttributes(index);
    if (columns == 1) {
        if (isnull[0]) return false;
        *h = index_key_hash(index, values[0]);
        return true;
    }
    CompositeKey key;
    for (int i = 0; i < columns; i++) {
        if (isnull[i]) return false;
        FmgrInfo *hash = index_getprocinfo(index, AttrNumber(i + 1), 1);
        if (!key.add(uint64_t(
                DatumGetInt64(FunctionCall1Coll(hash, index->rd_indcollation[i], values[i])))))
            check_key_columns(index);
    }
    *h = key.hash();
    return true;
}

void check_key_columns(Relation index) {
    if (IndexRelationGetNumberOfKeyAttributes(index) > int(kMaxKeyParts))
        ereport(ERROR,
                (errcode(ERRCODE_TOO_MANY_COLUMNS),
                 errmsg("a bloomfilter index can have at most %u key columns", kMaxKeyParts)));
}

bool is_bloomfilter_index(Relation index) {
    return (index->rd_rel->relkind == RELKIND_INDEX ||
            index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX) &&
           index->rd_indam != nullptr && index->rd_indam->aminsert == bloom_am_insert;
}

}  // namespace bloomfilter

// Runs once per backend, when the library is loaded: besides the index's options, it times the
// ways of checking a block this CPU has (about 1 ms) and keeps the fastest (bloom_check_path()).
void bloomfilter::register_index_options() {
    index_relopt_kind = add_reloption_kind();
    // Defaults outside the ranges: "not given" (the build decides, index_build.cpp).
    add_int_reloption(index_relopt_kind, "capacity",
                      "Number of distinct keys the filter is sized for (without it, a growing "
                      "index's first layer is sized from the rows, a fixed one for 1000000)",
                      0, 1, PG_INT32_MAX, ShareUpdateExclusiveLock);
    add_real_reloption(index_relopt_kind, "error_rate",
                       "False-positive rate at capacity, between 0 and 1", kDefaultErrorRate, 0.0,
                       1.0, ShareUpdateExclusiveLock);
    // Read by the build: a change takes effect at the next REINDEX.
    add_int_reloption(index_relopt_kind, "expansion",
                      "0: a fixed size; 2 or more (2 without it): a layer this many times larger "
                      "is added when the newest is full",
                      -1, 0, 1024, ShareUpdateExclusiveLock);
}

extern "C" Datum bloom_index_handler(PG_FUNCTION_ARGS) {
    IndexAmRoutine *am = makeNode(IndexAmRoutine);
    am->amstrategies = 0;
    am->amsupport = 1;
    am->amoptsprocnum = 0;
    am->amcanorder = false;
    am->amcanorderbyop = false;
    am->amcanbackward = false;
    am->amcanunique = false;
    am->amcanmulticol = true;
    am->amoptionalkey = false;
    am->amsearcharray = false;
    am->amsearchnulls = false;
    am->amstorage = false;
    am->amclusterable = false;
    am->ampredlocks = false;
    am->amcanparallel = false;
    am->amcaninclude = false;
    am->amusemaintenanceworkmem = true;
    am->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
    am->amkeytype = InvalidOid;
    am->ambuild = bloom_am_build;
    am->ambuildempty = bloom_am_build_empty;
    am->aminsert = bloom_am_insert;
    am->ambulkdelete = bloom_am_bulk_delete;
    am->amvacuumcleanup = bloom_am_vacuum_cleanup;
    am->amcanreturn = nullptr;
    am->amcostestimate = bloom_am_cost_estimate;
    am->amoptions = bloom_am_options;
    am->amproperty = nullptr;
    am->ambuildphasename = nullptr;
    am->amvalidate = bloom_am_validate;
    am->amadjustmembers = nullptr;
    am->ambeginscan = bloom_am_begin_scan;
    am->amrescan = bloom_am_rescan;
    am->amgettuple = nullptr;
    am->amgetbitmap = nullptr;
    am->amendscan = bloom_am_end_scan;
    am->ammarkpos = nullptr;
    am->amrestrpos = nullptr;
    am->amestimateparallelscan = nullptr;
    am->aminitparallelscan = nullptr;
    am->amparallelrescan = nullptr;
    PG_RETURN_POINTER(am);
}
