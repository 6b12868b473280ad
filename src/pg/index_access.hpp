// What a check of a bloomfilter index needs of it, and who may read it: shared by
// bloom_index_contains (index_contains.cpp) and the functions that read an index's filter
// (index_read.cpp).
#pragma once

#include "index_pages.hpp"

namespace bloomfilter {

// What a check needs of an index, worked out on the first check in this backend and kept until
// the index or its table changes (a relcache invalidation of either, or of a partition's table
// or index at any level): prepared statements run
// with a new fn_extra each time, and this work would cost more than the check itself.
struct IndexCheck {
    Oid index_oid;  // the hash key
    Oid heap_oid;
    bool valid;
    // Being prepared, or its expression evaluated: the table owner's functions run then, and a
    // check of the same index from them (which could free what is in use) is refused.
    bool in_use;
    MemoryContext context;  // everything below
    Bitmapset *columns;     // the table's columns the index reads, for the privilege check
    bool partitioned;
    List *parts;  // a partitioned index's descendants: PartIndex entries, parents before children
    Oid unindexed_partition;  // a partition with no index under it (a foreign table), if any
    // The key column (0-based) the table is partitioned by alone, a plain column of the index, or
    // -1: a check then visits only the partition that column's value routes to.
    int routed_by;
    // An expression index: the value stands for column `column` of the table, and the index's
    // expression of it is the key.
    bool expression;
    AttrNumber column;  // InvalidAttrNumber: an expression of several columns, or of none
    // The expression calls only code built into PostgreSQL (expression_is_built_in): any
    // caller may have it evaluated, as itself. Otherwise only the owner and its members may.
    bool built_in_expression;
    Oid column_type;  // of the value: the indexed column's, or the expression's column's
    Oid heap_owner;
    // The functions the expression calls (add_executed_functions): the state below is built
    // once and serves whoever checks next, so EXECUTE on them is checked at every evaluation
    // (check_execute), as the executor checks it for every statement.
    List *functions;
    bool planned_functions;  // those of the planned expression (an inlined body's) added
    // The role they were last found executable by, and privileges_generation then.
    Oid executable_by;
    uint64 executable_generation;
    IndexInfo *index_info;
    EState *estate;
    TupleTableSlot *slot;
    // A multicolumn index's key columns, worked out by its first check in `context`
    // (index_composite.cpp), or null.
    struct CompositeCheck *composite;
};

// An index under a partitioned index, and the table it indexes.
struct PartIndex {
    Oid index;
    Oid table;
    Oid parent_index;
    bool leaf;
    int routed_by;  // a partitioned table's routing key column, as IndexCheck's; -1: none
};

// Opens a bloomfilter index (AccessShareLock, its table's first) that answers, with the
// invalidations other sessions sent taken in: 42809 if it is not a bloomfilter index, 55000 if it
// may miss keys, 40001 if REINDEX CONCURRENTLY replaced it. `heap_oid`: its table, when known.
Relation open_bloomfilter_index(Oid index_oid, Oid heap_oid = InvalidOid);
// The index a name (as regclass's input takes it) means now, resolved as a statement resolves a
// table's name: its table and the index locked, the invalidations other sessions sent taken in,
// and looked up again if they changed what it names. The index's table in *heap_oid.
// *remembered (null at first, allocated in `context`): the last name a call site resolved, reused
// only while nothing it depends on can have changed.
struct ResolvedName {
    uint64 invalidations;  // SharedInvalidMessageCounter when it was resolved
    LocalTransactionId transaction;
    CommandId command;
    Oid user;
    Oid index_oid;
    Oid heap_oid;
    MemoryContext memory;  // the name and the search_path, reset for the next name
    SearchPathSnapshot *search_path;
    char *name;
    int length;
};
Oid resolve_index_name(text *name, Oid *heap_oid, ResolvedName **remembered, MemoryContext context);
// Errors with 55000 when an index may miss keys.
void check_valid(Relation index);
// Errors with 55000 when a partitioned index may miss keys: a partition has no index under it.
void check_partitions_indexed(Relation index, const IndexCheck *check);
// What a check needs of the index, kept in this backend until the index or its table changes.
IndexCheck *index_check(Relation index);
// The index's expressions (Anum_pg_index_indexprs) or predicate (Anum_pg_index_indpred) as
// stored in pg_index, unplanned, or null.
Node *stored_index_expression(Relation index, AttrNumber attribute);
// The table owner's code (an index's expression or predicate) run on the caller's behalf: as
// the owner, in a security-restricted operation, with search_path = pg_catalog, pg_temp, as
// PostgreSQL 17 runs it for REINDEX or VACUUM, never with the caller's rights or schemas.
// enter_as_owner switches, leave_as_owner switches back; an error in between is undone by the
// (sub)transaction's abort.
struct AsOwner {
    Oid caller;
    int security_context;
    int guc_level;
};
AsOwner enter_as_owner(Oid owner);
void leave_as_owner(const AsOwner &saved);

// Errors with 0A000 when the index's table is a Citus table (distributed, reference or local):
// the index is its shell's, which holds no rows.
void check_not_distributed(Relation index, Oid heap_oid, const char *function);
// Errors unless the caller may learn what the index holds (42501), or when check_not_distributed
// does.
void check_may_read(Relation index, const IndexCheck *check, const char *function);
// The same for a Citus table's index: the privileges alone.
void check_may_read_shards(Relation index, const IndexCheck *check, const char *function);
// Whether the table is a Citus distributed, reference or local table (its rows in shards).
bool citus_table(Oid heap_oid);
// A check of a Citus table's index against its shards' indexes, each read on its node by
// `function` (the caller's: bloom_index_contains or bloom_index_contains_key, function_oid) as
// the caller: present when one says so, null when each gives NULL (an expression index).
enum class ShardAnswer { absent, present, null };
// The same, over the connections of this transaction (Citus's executor): whether one shard's
// index may hold the key (its text form and type). Not for a partitioned table.
// `function_oid`: bloom_index_contains's, whose schema holds bloom_index_probe.
bool shards_probe(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                  const char *key_text, Oid key_type);
// The same for a multicolumn index: its composite key's hash, worked out here, whose bits each
// shard's index (of as many key columns as `index`) is asked for.
bool shards_probe_hash(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                       KeyHash h);
// bloom_index_contains_key(index, key) called from C.
bool index_contains_key(Oid index_oid, Datum key, Oid key_type, bool *is_null);
// `count` values (1 to kMaxKeyParts: a multicolumn index's, in column order), each of a key
// type or a domain over one, sent as a literal of that key type.
ShardAnswer shards_contain(Relation index, Oid heap_oid, Oid function_oid, const char *function,
                           int count, const Datum *values, const Oid *value_types);
// A shard's multicolumn index (bloom_index_probe, on the shard's node): whether it may hold the
// composite key of hash `h`, of `columns` key columns (42804 unless it has that many). The
// caller needs what reading the index needs (check_may_read).
bool shard_index_contains_hash(Oid index_oid, int columns, KeyHash h);
// Whether the caller has the table owner's privileges (is the owner, a member of it, or a
// superuser): the owner's code may then run as the owner on its behalf.
bool has_owner_privileges(Oid heap_owner);
// Errors unless the caller may have the owner's code run on rows of the table, as a maintenance
// command may: its owner or a member of it, or (17 on) a role with MAINTAIN on it (42501).
void check_may_maintain(Relation index, Oid heap_oid, const char *function);
// Appends to *functions (once each, in the order the executor checks them) the functions whose
// EXECUTE privilege the executor checks when it builds a state for the expression: those of
// function calls and operators.
void add_executed_functions(Node *expression, List **functions);
// Errors as the executor does (42501, "permission denied for function ...") unless the current
// user may execute each of the expression's functions.
void check_execute(IndexCheck *check);
// An index expression (`info`, of one key column) of a value of the table's column `column`,
// as `run_as`, EXECUTE checked (index_contains.cpp).
Datum evaluate_index_expression(IndexCheck *check, IndexInfo *info, AttrNumber column,
                                bool *planned, Oid run_as, Datum column_value, bool *is_null);
// Whether an expression runs nothing but code built into PostgreSQL: functions, operators, casts
// and types of pg_catalog implemented in C, no domain coercion, no sub-query.
bool expression_is_built_in(Node *expression);

// Composite keys (index_composite.cpp). Raises 42804 unless the index has `values` key columns:
// a check gives a value for each, in column order.
void check_key_count(Relation index, int values, const char *function);
// Whether a partitioned index's partitions may hold a key hashed already (index_contains.cpp):
// `column_values`, each key column's value as its column's type, route it when a level is
// partitioned by one of them (check->routed_by, PartIndex::routed_by).
bool partitions_hold(Relation index, IndexCheck *check, const Datum *column_values, KeyHash h);

}  // namespace bloomfilter
