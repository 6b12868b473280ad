// The check of a multicolumn bloomfilter index: bloom_index_contains(index, v1, v2, ...) and
// bloom_index_contains_key(index, k1, k2, ...), the values in the index's column order, combined
// into one composite key (docs/format.md, "Composite keys") as the index combines a row's.
#include "index_access.hpp"

extern "C" {
#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "nodes/pg_list.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
}

using namespace bloomfilter;

extern "C" {
PG_FUNCTION_INFO_V1(bloom_index_contains_composite);
PG_FUNCTION_INFO_V1(bloom_index_contains_composite_named);
PG_FUNCTION_INFO_V1(bloom_index_contains_key_composite);
PG_FUNCTION_INFO_V1(bloom_index_contains_key_composite_named);
}

namespace bloomfilter {

// One key column of a multicolumn index.
struct KeyPart {
    bool expression;
    // The table's column a value stands for: the key column, or the one column of the key's
    // expression (InvalidAttrNumber: an expression of none or several).
    AttrNumber column;
    Oid column_type;  // that column's (base) type: a value's
    Oid key_type;     // the index column's (base) type: a key's
    bool own_hash;    // its support function is the extension's (is_key_hash_support)
    // An expression's: the expression alone, for FormIndexDatum.
    IndexInfo *index_info;
    bool planned_functions;  // the functions of its planned form are in the check's (below)
};

struct CompositeCheck {
    int count;
    KeyPart parts[kMaxKeyParts];
    bool expressions;           // some part is an expression
    bool expressions_of_one;    // each expression reads one column
    bool built_in_expressions;  // expression_is_built_in of them all
    Oid heap_owner;
};

void check_key_count(Relation index, int values, const char *function) {
    const int columns = IndexRelationGetNumberOfKeyAttributes(index);
    if (columns == values) return;
    ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                    errmsg("%s of index \"%s\" takes %d value%s, one for each key column, not %d",
                           function, RelationGetRelationName(index), columns,
                           columns == 1 ? "" : "s", values),
                    errhint("The index's key columns, in order: %s.",
                            pg_get_indexdef_columns(RelationGetRelid(index), true))));
}

}  // namespace bloomfilter

namespace {

// Which values can be keys of which column types: the same bytes are hashed.
enum class Family { text, bytea, integer, uuid, other };

Family family_of(Oid type) {
    switch (key_base_type(type)) {
        case TEXTOID:
        case VARCHAROID: return Family::text;
        case BYTEAOID: return Family::bytea;
        case INT2OID:
        case INT4OID:
        case INT8OID: return Family::integer;
        case UUIDOID: return Family::uuid;
        default: return Family::other;
    }
}

// Worked out once per IndexCheck (freed with its context when the index or table changes).
CompositeCheck *prepare_composite(Relation index, IndexCheck *check) {
    MemoryContext previous = MemoryContextSwitchTo(check->context);
    CompositeCheck *composite = static_cast<CompositeCheck *>(palloc0(sizeof(CompositeCheck)));
    composite->count = IndexRelationGetNumberOfKeyAttributes(index);
    composite->expressions_of_one = true;
    Relation heap = table_open(check->heap_oid, AccessShareLock);
    composite->heap_owner = heap->rd_rel->relowner;
    // A copy: the relation's own descriptor is reference-counted per transaction.
    TupleDesc descriptor = CreateTupleDescCopy(RelationGetDescr(heap));
    table_close(heap, NoLock);
    // As stored in pg_index, not the relcache's copies (see stored_index_expression).
    List *expressions =
        reinterpret_cast<List *>(stored_index_expression(index, Anum_pg_index_indexprs));
    ListCell *next_expression = list_head(expressions);
    for (int i = 0; i < composite->count; i++) {
        KeyPart &part = composite->parts[i];
        part.key_type = getBaseType(TupleDescAttr(RelationGetDescr(index), i)->atttypid);
        part.own_hash =
            is_key_hash_support(index_getprocinfo(index, AttrNumber(i + 1), 1)->fn_addr);
        const AttrNumber indexed = index->rd_index->indkey.values[i];
        if (indexed != 0) {
            part.column = indexed;
            part.column_type = part.key_type;
            continue;
        }
        part.expression = true;
        composite->expressions = true;
        Node *expression = static_cast<Node *>(lfirst(next_expression));
        next_expression = lnext(expressions, next_expression);
        Bitmapset *columns = nullptr;
        pull_varattnos(expression, 1, &columns);
        const int member = bms_num_members(columns) == 1 ? bms_next_member(columns, -1) : -1;
        if (member < 0 || member + FirstLowInvalidHeapAttributeNumber <= 0) {
            composite->expressions_of_one = false;
            continue;
        }
        part.column = AttrNumber(member + FirstLowInvalidHeapAttributeNumber);
        part.column_type = getBaseType(TupleDescAttr(descriptor, part.column - 1)->atttypid);
        // Its key column and expression alone, as stored: FormIndexDatum plans it when first
        // evaluated, under enter_as_owner (see prepare_index_check).
        part.index_info = makeNode(IndexInfo);
        part.index_info->ii_NumIndexAttrs = 1;
        part.index_info->ii_NumIndexKeyAttrs = 1;
        part.index_info->ii_IndexAttrNumbers[0] = 0;
        part.index_info->ii_Expressions = list_make1(expression);
    }
    composite->built_in_expressions =
        !composite->expressions || expression_is_built_in(reinterpret_cast<Node *>(expressions));
    // EXECUTE on every function the expressions call, checked at each evaluation (check_execute)
    // as for a one-column index's expression.
    add_executed_functions(reinterpret_cast<Node *>(expressions), &check->functions);
    // The state an expression is evaluated in; freed with the check (forget_index_check).
    if (composite->expressions && check->estate == nullptr) check->estate = CreateExecutorState();
    if (composite->expressions && check->slot == nullptr)
        check->slot = MakeSingleTupleTableSlot(descriptor, &TTSOpsVirtual);
    MemoryContextSwitchTo(previous);
    return composite;
}

// An expression part's key for a value of its column, in the check's per-tuple memory (reset by
// the caller). The expression is the table owner's code: it runs as `run_as`, under the
// restrictions of enter_as_owner, as bloom_index_contains runs a one-column index's.
Datum evaluate_part(IndexCheck *check, KeyPart &part, Oid run_as, Datum column_value,
                    bool *is_null) {
    return evaluate_index_expression(check, part.index_info, part.column, &part.planned_functions,
                                     run_as, column_value, is_null);
}

// The value as the column's type, or false when no value of the column's type can equal it (an
// integer out of the column's range).
bool value_as_column(Datum value, Oid value_type, Oid column_type, Datum *out) {
    value_type = key_base_type(value_type);
    if (family_of(column_type) != Family::integer) {
        *out = value;
        return true;
    }
    const int64 v = value_type == INT2OID   ? DatumGetInt16(value)
                    : value_type == INT4OID ? DatumGetInt32(value)
                                            : DatumGetInt64(value);
    switch (column_type) {
        case INT2OID:
            if (v < PG_INT16_MIN || v > PG_INT16_MAX) return false;
            *out = Int16GetDatum(int16(v));
            return true;
        case INT4OID:
            if (v < PG_INT32_MIN || v > PG_INT32_MAX) return false;
            *out = Int32GetDatum(int32(v));
            return true;
        default: *out = Int64GetDatum(v); return true;
    }
}

// What a call site keeps between calls (fn_extra, in fn_mcxt): the name it last resolved, and its
// arguments' types, fixed by its expression.
struct CallSite {
    ResolvedName *name;
    Oid argument_types[FUNC_MAX_ARGS];
};

CallSite *call_site(FunctionCallInfo fcinfo) {
    if (fcinfo->flinfo->fn_extra == nullptr) {
        CallSite *site = static_cast<CallSite *>(
            MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(CallSite)));
        for (int i = 0; i < PG_NARGS(); i++)
            site->argument_types[i] = get_fn_expr_argtype(fcinfo->flinfo, i);
        fcinfo->flinfo->fn_extra = site;
    }
    return static_cast<CallSite *>(fcinfo->flinfo->fn_extra);
}

// Argument `argument` as a value of `type`: an untyped literal is read by the type's input
// function (of a built-in type: a domain's constraints, its owner's code, are not run), any
// other value must be of the type's family.
Datum value_of_type(FunctionCallInfo fcinfo, const CallSite *site, Relation index, int argument,
                    Oid type, Oid *value_type) {
    *value_type = site->argument_types[argument];
    if (*value_type == UNKNOWNOID) {
        Oid input, parameter;
        getTypeInputInfo(type, &input, &parameter);
        *value_type = type;
        return OidInputFunctionCall(input, DatumGetCString(PG_GETARG_DATUM(argument)), parameter,
                                    -1);
    }
    if (!OidIsValid(*value_type) || family_of(*value_type) != family_of(type) ||
        family_of(type) == Family::other)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("index \"%s\" has keys of type %s in column %d, not %s",
                               RelationGetRelationName(index), format_type_be(type), argument,
                               OidIsValid(*value_type) ? format_type_be(*value_type) : "unknown")));
    return PG_GETARG_DATUM(argument);
}

enum class Outcome { hash, absent, null };

// A key's hash by the index's support function for its column, as the index hashes it: the same
// composite key by construction. The extension's own support functions are called directly.
uint64_t part_hash(Relation index, const KeyPart &part, int i, Datum key) {
    if (part.own_hash) return value_hash(key, part.key_type);
    return uint64_t(DatumGetInt64(FunctionCall1Coll(index_getprocinfo(index, AttrNumber(i + 1), 1),
                                                    index->rd_indcollation[i], key)));
}

// The composite key the values stand for; `absent` when no row can have it (an integer out of
// its column's range), `null` when an expression gives NULL (such a row is not indexed).
// column_values[i]: value i as its column's type, for routing (a plain key column's). values[i],
// types[i]: the values read (an untyped literal as its column's type), for a Citus table's shards.
Outcome composite_key(FunctionCallInfo fcinfo, Relation index, IndexCheck *check,
                      CompositeCheck *composite, bool key_given, Oid run_as, KeyHash *h,
                      Datum *column_values, Datum *values, Oid *types) {
    const CallSite *site = call_site(fcinfo);
    CompositeKey key;
    for (int i = 0; i < composite->count; i++) {
        KeyPart &part = composite->parts[i];
        Oid value_type;
        const Datum value = value_of_type(
            fcinfo, site, index, i + 1, key_given ? part.key_type : part.column_type, &value_type);
        values[i] = value;
        types[i] = value_type;
        Datum column_value;
        if (!value_as_column(value, value_type, key_given ? part.key_type : part.column_type,
                             &column_value))
            return Outcome::absent;
        column_values[i] = column_value;
        if (key_given || !part.expression) {
            key.add(part_hash(index, part, i, column_value));
            continue;
        }
        bool is_null;
        const Datum part_key = evaluate_part(check, part, run_as, column_value, &is_null);
        if (!is_null) key.add(part_hash(index, part, i, part_key));
        ResetPerTupleExprContext(check->estate);
        if (is_null) return Outcome::null;
    }
    *h = key.hash();
    return Outcome::hash;
}

// Every form: the index by name (text) or OID (regclass), values (`key_given` false: an
// expression column's value is its table column's, the expression applied here) or keys.
Datum check_composite(FunctionCallInfo fcinfo, const char *function, bool by_name, bool key_given) {
    CallSite *site = call_site(fcinfo);
    Oid heap_oid = InvalidOid;
    const Oid index_oid = by_name ? resolve_index_name(PG_GETARG_TEXT_PP(0), &heap_oid, &site->name,
                                                       fcinfo->flinfo->fn_mcxt)
                                  : PG_GETARG_OID(0);
    Relation index = open_bloomfilter_index(index_oid, heap_oid);
    IndexCheck *check = index_check(index);
    check_key_count(index, PG_NARGS() - 1, function);
    // A Citus table's index is its shell's, which holds no rows: its shards' indexes answer. The
    // same privileges, which the shards' nodes check again.
    const bool sharded = citus_table(check->heap_oid);
    check_may_read_shards(index, check, function);
    check_partitions_indexed(index, check);
    if (check->composite == nullptr) check->composite = prepare_composite(index, check);
    CompositeCheck *composite = check->composite;
    Oid run_as = GetUserId();
    if (!key_given && composite->expressions) {
        if (has_owner_privileges(composite->heap_owner)) run_as = composite->heap_owner;
        if (!composite->expressions_of_one)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s needs each key of index \"%s\" to be a column or an "
                                   "expression of one column",
                                   function, RelationGetRelationName(index)),
                            errhint("Pass the keys, the expressions' values, to "
                                    "bloom_index_contains_key.")));
        if (!composite->built_in_expressions && run_as != composite->heap_owner)
            // As for a one-column index: the owner's functions never run on a value the caller
            // chose for a role that could not run them so itself.
            ereport(
                ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("%s cannot apply the expressions of index \"%s\" for role \"%s\"", function,
                        RelationGetRelationName(index), GetUserNameFromId(GetUserId(), false)),
                 errdetail("The expressions %s run code that is not built into PostgreSQL, "
                           "which only the table's owner and its members may have run as "
                           "the owner.",
                           pg_get_indexdef_columns(RelationGetRelid(index), true)),
                 errhint("Apply the expressions to the values yourself and check the "
                         "results with bloom_index_contains_key.")));
    }
    KeyHash h;
    Datum column_values[kMaxKeyParts];
    Datum values[kMaxKeyParts];
    Oid types[kMaxKeyParts];
    const Outcome outcome = composite_key(fcinfo, index, check, composite, key_given, run_as, &h,
                                          column_values, values, types);
    bool present = false;
    if (outcome == Outcome::hash && sharded) {
        // The key hashed here, as on one server (an expression applied under the rules above):
        // each shard's index is asked for its bits over this transaction's connections. A
        // partitioned table's shards, or a parallel worker's check (where Citus's executor
        // refuses), are asked each node on a connection of its own, with the values.
        if (!check->partitioned && !IsParallelWorker()) {
            present =
                shards_probe_hash(index, check->heap_oid, fcinfo->flinfo->fn_oid, function, h);
        } else {
            const ShardAnswer answer =
                shards_contain(index, check->heap_oid, fcinfo->flinfo->fn_oid, function,
                               composite->count, values, types);
            if (answer == ShardAnswer::null) {
                index_close(index, NoLock);
                PG_RETURN_NULL();
            }
            present = answer == ShardAnswer::present;
        }
    } else if (outcome == Outcome::hash) {
        present = check->partitioned ? partitions_hold(index, check, column_values, h)
                                     : index_contains(index, h);
    }
    index_close(index, NoLock);
    if (outcome == Outcome::null) PG_RETURN_NULL();
    PG_RETURN_BOOL(present);
}

}  // namespace

namespace bloomfilter {

// The check of a shard's multicolumn index for bloom_index_probe: what check_composite checks of
// an index before it reads it, for a key already hashed (on the coordinator, for the shell's
// index, of the same key columns).
bool shard_index_contains_hash(Oid index_oid, int columns, KeyHash h) {
    const char *function = "bloom_index_probe";
    Relation index = open_bloomfilter_index(index_oid);
    IndexCheck *check = index_check(index);
    check_key_count(index, columns, function);
    // A shard is no Citus table: its index holds the shard's rows.
    check_may_read(index, check, function);
    if (check->partitioned)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s cannot check partitioned index \"%s\" by a key's hash", function,
                               RelationGetRelationName(index))));
    const bool present = index_contains(index, h);
    index_close(index, NoLock);
    return present;
}

}  // namespace bloomfilter

// bloom_index_contains(index, v1, v2, ...): false when no row of the index's table has that
// composite key (for an expression column, the expression's value of v_i); true when one
// probably does; NULL when an expression gives NULL.
extern "C" Datum bloom_index_contains_composite(PG_FUNCTION_ARGS) {
    return check_composite(fcinfo, "bloom_index_contains", false, false);
}

extern "C" Datum bloom_index_contains_composite_named(PG_FUNCTION_ARGS) {
    return check_composite(fcinfo, "bloom_index_contains", true, false);
}

// bloom_index_contains_key(index, k1, k2, ...): the same for the keys as the index holds them,
// an expression column's value given, not evaluated.
extern "C" Datum bloom_index_contains_key_composite(PG_FUNCTION_ARGS) {
    return check_composite(fcinfo, "bloom_index_contains_key", false, true);
}

extern "C" Datum bloom_index_contains_key_composite_named(PG_FUNCTION_ARGS) {
    return check_composite(fcinfo, "bloom_index_contains_key", true, true);
}
