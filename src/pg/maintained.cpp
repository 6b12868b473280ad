// Maintained filters (bloomfilter 1.3): the one trigger function that keeps them current, and the
// only writers of their tables.
//
// Every role may call these functions; PUBLIC may only read bloom_filters and
// bloom_filter_shards (under row-level security). A write runs here, as the owner of those
// tables, only after checking that the calling role has the rights of the owner of the filter's
// table (or, for the trigger, that it fires on that table). The statements run then are fixed
// texts with the extension's schema quoted in, every operator OPERATOR(pg_catalog.x), every
// value a parameter, and a search_path of pg_catalog, pg_temp: no user-defined function,
// operator or cast can run with those rights. The trigger reads its key in C from the new row,
// for a closed list of built-in column types, so it calls no user-visible function either.
//
// As in the rest of src/pg: no C++ object with a destructor is alive across an ereport.
#include "glue.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(bloom_filter_maintain);
PG_FUNCTION_INFO_V1(bloom_filter_store);
PG_FUNCTION_INFO_V1(bloom_filter_forget);
PG_FUNCTION_INFO_V1(bloom_filter_forget_dropped);
}

namespace {

// The statements run as the tables' owner. %s is the extension's schema, quoted.
enum Statement {
    kLookup,    // $1 name: relation, column, key type and shard count of a filter
    kLockName,  // $1 name: the filter's relation, its row locked
    kAddText,   // $1 key, $2 name, $3 shards: add the key to its shard
    kAddBytea,
    kAddInt8,
    kAddUuid,
    kDeleteShards,   // $1 name
    kDeleteFilter,   // $1 name
    kInsertFilter,   // the configuration row
    kInsertShards,   // $1 name, $2 bloom[]: one row per element, shard = index - 1
    kForgetDropped,  // configurations (and their shards) whose table no longer exists
    kStatementCount
};

struct StatementText {
    const char *text;
    int nargs;
    Oid types[8];  // 0: the extension's bloom[] type, filled in when prepared
};

constexpr Oid kBloomArray = InvalidOid;

// Adds a key to its shard: one statement, prepared once for each key type.
constexpr const char kAddKey[] =
    "UPDATE %1$s.bloom_filter_shards SET f = %1$s.bloom_add(f, $1) "
    "WHERE name OPERATOR(pg_catalog.=) $2 AND shard OPERATOR(pg_catalog.=) %1$s.bloom_shard($1, "
    "$3)";

const StatementText kStatements[kStatementCount] = {
    {"SELECT c.relation::pg_catalog.oid, c.column_name, c.key_type::pg_catalog.oid, c.shards "
     "FROM %s.bloom_filters c WHERE c.name OPERATOR(pg_catalog.=) $1",
     1,
     {TEXTOID}},
    {"SELECT c.relation::pg_catalog.oid FROM %s.bloom_filters c "
     "WHERE c.name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
     1,
     {TEXTOID}},
    {kAddKey, 3, {TEXTOID, TEXTOID, INT4OID}},
    {kAddKey, 3, {BYTEAOID, TEXTOID, INT4OID}},
    {kAddKey, 3, {INT8OID, TEXTOID, INT4OID}},
    {kAddKey, 3, {UUIDOID, TEXTOID, INT4OID}},
    {"DELETE FROM %s.bloom_filter_shards WHERE name OPERATOR(pg_catalog.=) $1", 1, {TEXTOID}},
    {"DELETE FROM %s.bloom_filters WHERE name OPERATOR(pg_catalog.=) $1", 1, {TEXTOID}},
    {"INSERT INTO %s.bloom_filters (name, relation, column_name, key_type, capacity, error_rate, "
     "shards, shard_capacity) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
     8,
     {TEXTOID, REGCLASSOID, NAMEOID, REGTYPEOID, INT8OID, FLOAT8OID, INT4OID, INT8OID}},
    {"INSERT INTO %s.bloom_filter_shards (name, shard, f) "
     "SELECT $1, (u.o OPERATOR(pg_catalog.-) 1::pg_catalog.int8)::pg_catalog.int4, u.f "
     "FROM pg_catalog.unnest($2) WITH ORDINALITY AS u (f, o)",
     2,
     {TEXTOID, kBloomArray}},
    {"WITH gone AS (DELETE FROM %1$s.bloom_filters c WHERE NOT EXISTS (SELECT FROM "
     "pg_catalog.pg_class r "
     "WHERE r.oid OPERATOR(pg_catalog.=) c.relation::pg_catalog.oid) RETURNING c.name) "
     "DELETE FROM %1$s.bloom_filter_shards s USING gone WHERE s.name OPERATOR(pg_catalog.=) "
     "gone.name",
     0,
     {}},
};

// Prepared plans, for the bloom_filters table they were prepared for (a new one after DROP and
// CREATE EXTENSION, whose bloom type is new too).
SPIPlanPtr plans[kStatementCount];
Oid plans_table = InvalidOid;

// The state saved while running as the tables' owner.
struct Elevation {
    Oid saved_user;
    int saved_context;
    int guc_level;
};

Oid extension_namespace(FunctionCallInfo fcinfo) {
    return get_func_namespace(fcinfo->flinfo->fn_oid);
}

Oid relation_owner(Oid relation, bool missing_ok) {
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
    if (!HeapTupleIsValid(tuple)) {
        if (missing_ok) return InvalidOid;
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation with OID %u does not exist", relation)));
    }
    Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    return owner;
}

// The owner of the extension's tables: the role whose rights the writes need.
Oid tables_owner(Oid namespace_oid) {
    Oid filters = get_relname_relid("bloom_filters", namespace_oid);
    if (!OidIsValid(filters))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("the bloomfilter extension's table bloom_filters is missing")));
    return relation_owner(filters, false);
}

// Runs as the tables' owner with a search_path of pg_catalog, pg_temp, in a security-restricted
// operation (as index builds and RI checks do). Call inside SPI_connect/SPI_finish.
Elevation elevate(Oid namespace_oid) {
    Elevation state;
    Oid owner = tables_owner(namespace_oid);
    GetUserIdAndSecContext(&state.saved_user, &state.saved_context);
    state.guc_level = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    SetUserIdAndSecContext(
        owner, state.saved_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    return state;
}

void restore(const Elevation &state) {
    SetUserIdAndSecContext(state.saved_user, state.saved_context);
    AtEOXact_GUC(false, state.guc_level);
}

// Runs body() as the tables' owner (elevate), between SPI_connect and SPI_finish. If it raises,
// the role is put back here; the abort of the (sub)transaction undoes the search_path.
template <typename Body>
void as_tables_owner(Oid namespace_oid, Body &&body) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    Elevation state = elevate(namespace_oid);
    PG_TRY();
    { body(); }
    PG_CATCH();
    {
        SetUserIdAndSecContext(state.saved_user, state.saved_context);
        PG_RE_THROW();
    }
    PG_END_TRY();
    restore(state);
    SPI_finish();
}

SPIPlanPtr plan(Oid namespace_oid, Statement which) {
    Oid table = get_relname_relid("bloom_filters", namespace_oid);
    if (plans_table != table) {
        for (SPIPlanPtr &p : plans) {
            if (p != nullptr) SPI_freeplan(p);
            p = nullptr;
        }
        plans_table = table;
    }
    if (plans[which] == nullptr) {
        const StatementText &statement = kStatements[which];
        const char *schema = quote_identifier(get_namespace_name(namespace_oid));
        char *query = psprintf(statement.text, schema);
        Oid types[8];
        for (int i = 0; i < statement.nargs; i++) {
            types[i] = statement.types[i];
            if (types[i] == kBloomArray) {
                Oid bloom = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("bloom"),
                                            ObjectIdGetDatum(namespace_oid));
                types[i] = get_array_type(bloom);
            }
        }
        SPIPlanPtr prepared = SPI_prepare(query, statement.nargs, types);
        if (prepared == nullptr)
            elog(ERROR, "SPI_prepare failed for \"%s\": %s", query,
                 SPI_result_code_string(SPI_result));
        SPI_keepplan(prepared);
        plans[which] = prepared;
        pfree(query);
    }
    return plans[which];
}

int run(Oid namespace_oid, Statement which, Datum *values, const char *nulls) {
    int status = SPI_execute_plan(plan(namespace_oid, which), values, nulls, false, 0);
    if (status < 0) elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(status));
    return status;
}

// The key type a column of this type is hashed as, or InvalidOid: exact built-in types only,
// so no domain, custom type or cast is ever involved.
Oid key_type_of(Oid column_type) {
    switch (column_type) {
        case TEXTOID:
        case VARCHAROID: return TEXTOID;
        case INT2OID:
        case INT4OID:
        case INT8OID: return INT8OID;
        case BYTEAOID: return BYTEAOID;
        case UUIDOID: return UUIDOID;
        default: return InvalidOid;
    }
}

// The key for a column value of one of the types above, as its key type's datum.
Datum key_of(Datum value, Oid column_type) {
    switch (column_type) {
        case INT2OID: return Int64GetDatum(int64(DatumGetInt16(value)));
        case INT4OID: return Int64GetDatum(int64(DatumGetInt32(value)));
        default: return value;
    }
}

Statement add_statement(Oid key_type) {
    switch (key_type) {
        case TEXTOID: return kAddText;
        case BYTEAOID: return kAddBytea;
        case INT8OID: return kAddInt8;
        default: return kAddUuid;
    }
}

bool fires_on(Oid filter_relation, Oid trigger_relation) {
    if (filter_relation == trigger_relation) return true;
    // A trigger on a partitioned table fires on its partitions.
    List *ancestors = get_partition_ancestors(trigger_relation);
    bool found = list_member_oid(ancestors, filter_relation);
    list_free(ancestors);
    return found;
}

// Whether the current role has the rights of the owner of a table.
bool owns(Oid owner) { return has_privs_of_role(GetUserId(), owner); }

}  // namespace

// The trigger of every maintained filter: AFTER INSERT OR UPDATE OF the column, FOR EACH ROW,
// with the filter's name as its one argument.
extern "C" Datum bloom_filter_maintain(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("bloom_filter_maintain: not called by the trigger manager")));
    TriggerData *trigger_data = reinterpret_cast<TriggerData *>(fcinfo->context);
    TriggerEvent event = trigger_data->tg_event;
    if (!TRIGGER_FIRED_AFTER(event) || !TRIGGER_FIRED_FOR_ROW(event) ||
        !(TRIGGER_FIRED_BY_INSERT(event) || TRIGGER_FIRED_BY_UPDATE(event)))
        ereport(
            ERROR,
            (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
             errmsg(
                 "bloom_filter_maintain must be an AFTER INSERT or UPDATE trigger FOR EACH ROW")));
    if (trigger_data->tg_trigger->tgnargs != 1)
        ereport(ERROR,
                (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                 errmsg("bloom_filter_maintain takes the filter's name as its one argument")));
    const char *filter_name = trigger_data->tg_trigger->tgargs[0];
    Relation relation = trigger_data->tg_relation;
    TupleDesc descriptor = RelationGetDescr(relation);
    HeapTuple row =
        TRIGGER_FIRED_BY_UPDATE(event) ? trigger_data->tg_newtuple : trigger_data->tg_trigtuple;
    Oid namespace_oid = extension_namespace(fcinfo);
    Datum name_datum = CStringGetTextDatum(filter_name);

    as_tables_owner(namespace_oid, [&] {
        Datum lookup_values[1] = {name_datum};
        run(namespace_oid, kLookup, lookup_values, nullptr);
        bool is_null;
        Oid filter_relation = InvalidOid;
        if (SPI_processed == 1)
            filter_relation = DatumGetObjectId(
                SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null));
        if (!OidIsValid(filter_relation) || !fires_on(filter_relation, RelationGetRelid(relation)))
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                            errmsg("relation \"%s\" has no maintained bloom filter \"%s\"",
                                   RelationGetRelationName(relation), filter_name),
                            errhint("bloom_filter_maintain works only on the table given to "
                                    "bloom_filter_create.")));
        HeapTuple config = SPI_tuptable->vals[0];
        TupleDesc config_descriptor = SPI_tuptable->tupdesc;
        char *column_name =
            NameStr(*DatumGetName(SPI_getbinval(config, config_descriptor, 2, &is_null)));
        Oid key_type = DatumGetObjectId(SPI_getbinval(config, config_descriptor, 3, &is_null));
        int32 shards = DatumGetInt32(SPI_getbinval(config, config_descriptor, 4, &is_null));

        int column = SPI_fnumber(descriptor, column_name);
        if (column <= 0)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("column \"%s\" of maintained bloom filter \"%s\" does not exist "
                                   "in relation \"%s\"",
                                   column_name, filter_name, RelationGetRelationName(relation))));
        Oid column_type = TupleDescAttr(descriptor, column - 1)->atttypid;
        if (key_type_of(column_type) != key_type || !OidIsValid(key_type))
            ereport(ERROR,
                    (errcode(ERRCODE_DATATYPE_MISMATCH),
                     errmsg("column \"%s\" of relation \"%s\" is of type %s, not one maintained "
                            "bloom filter \"%s\" can hash as %s",
                            column_name, RelationGetRelationName(relation),
                            format_type_be(column_type), filter_name, format_type_be(key_type))));
        Datum value = heap_getattr(row, column, descriptor, &is_null);
        bool changed = !is_null;
        if (changed && TRIGGER_FIRED_BY_UPDATE(event)) {
            // The key is the value's bytes: an unchanged value adds nothing.
            bool old_null;
            Datum old_value =
                heap_getattr(trigger_data->tg_trigtuple, column, descriptor, &old_null);
            Form_pg_attribute attribute = TupleDescAttr(descriptor, column - 1);
            changed = old_null ||
                      !datum_image_eq(old_value, value, attribute->attbyval, attribute->attlen);
        }
        if (changed) {
            Datum add_values[3] = {key_of(value, column_type), name_datum, Int32GetDatum(shards)};
            run(namespace_oid, add_statement(key_type), add_values, nullptr);
            if (SPI_processed != 1)
                ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                                errmsg("maintained bloom filter \"%s\" has no shard for this key",
                                       filter_name),
                                errhint("Rebuild it with bloom_filter_rebuild.")));
        }
    });
    return PointerGetDatum(nullptr);
}

// bloom_filter_store(name, relation, column_name, capacity, error_rate, shards, shard_capacity,
// filters bloom[], replace): writes a filter's configuration and shards. Without replace the
// name must be free (or held by a filter whose table was dropped); with it, the name must belong
// to a filter of this same table. The caller must have the rights of the table's owner.
extern "C" Datum bloom_filter_store(PG_FUNCTION_ARGS) {
    for (int i = 0; i < 9; i++)
        if (PG_ARGISNULL(i))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("bloom_filter_store: argument %d is NULL", i + 1)));
    Datum name_datum = PG_GETARG_DATUM(0);
    Oid relation = PG_GETARG_OID(1);
    Name column_name = PG_GETARG_NAME(2);
    int64 capacity = PG_GETARG_INT64(3);
    double error_rate = PG_GETARG_FLOAT8(4);
    int32 shards = PG_GETARG_INT32(5);
    int64 shard_capacity = PG_GETARG_INT64(6);
    ArrayType *filters = PG_GETARG_ARRAYTYPE_P(7);
    bool replace = PG_GETARG_BOOL(8);
    char *filter_name = text_to_cstring(DatumGetTextPP(name_datum));

    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relation));
    if (!HeapTupleIsValid(tuple))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation with OID %u does not exist", relation)));
    Form_pg_class form = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple));
    Oid owner = form->relowner;
    char kind = form->relkind;
    char persistence = form->relpersistence;
    ReleaseSysCache(tuple);
    if (!owns(owner))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("must be owner of table %s", get_rel_name(relation))));
    if (kind != RELKIND_RELATION && kind != RELKIND_PARTITIONED_TABLE)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("\"%s\" is not a table", get_rel_name(relation))));
    // A temporary table would let a role with only TEMP hold a name, and its filter would be
    // left behind by every session's end.
    if (persistence != RELPERSISTENCE_PERMANENT)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("maintained bloom filters follow permanent tables, and \"%s\" is not one",
                        get_rel_name(relation))));
    AttrNumber column = get_attnum(relation, NameStr(*column_name));
    if (column <= 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("column \"%s\" of relation \"%s\" does not exist",
                               NameStr(*column_name), get_rel_name(relation))));
    Oid column_type = get_atttype(relation, column);
    Oid key_type = key_type_of(column_type);
    if (!OidIsValid(key_type))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("bloom filters can follow text, varchar, bytea, smallint, integer, "
                               "bigint or uuid columns, not %s",
                               format_type_be(column_type))));
    if (ARR_NDIM(filters) != 1 || ARR_DIMS(filters)[0] != shards || array_contains_nulls(filters))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("bloom_filter_store needs exactly %d shard filters, none NULL", shards)));

    Oid namespace_oid = extension_namespace(fcinfo);
    as_tables_owner(namespace_oid, [&] {
        Datum name_values[1] = {name_datum};
        run(namespace_oid, kLockName, name_values, nullptr);
        if (SPI_processed == 1) {
            bool is_null;
            Oid held_by = DatumGetObjectId(
                SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null));
            bool dropped = !OidIsValid(relation_owner(held_by, true));
            if (!dropped && !(replace && held_by == relation))
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
                                errmsg("bloom filter \"%s\" already exists", filter_name)));
            run(namespace_oid, kDeleteShards, name_values, nullptr);
            run(namespace_oid, kDeleteFilter, name_values, nullptr);
        } else if (replace) {
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                            errmsg("bloom filter \"%s\" does not exist", filter_name)));
        }
        Datum filter_values[8] = {name_datum,
                                  ObjectIdGetDatum(relation),
                                  NameGetDatum(column_name),
                                  ObjectIdGetDatum(key_type),
                                  Int64GetDatum(capacity),
                                  Float8GetDatum(error_rate),
                                  Int32GetDatum(shards),
                                  Int64GetDatum(shard_capacity)};
        run(namespace_oid, kInsertFilter, filter_values, nullptr);
        Datum shard_values[2] = {name_datum, PointerGetDatum(filters)};
        run(namespace_oid, kInsertShards, shard_values, nullptr);
    });
    PG_RETURN_VOID();
}

// bloom_filter_forget(name): deletes a filter's configuration and shards (its triggers are the
// caller's to drop). Allowed to whoever has the rights of its table's owner, and to anyone once
// the table is gone.
extern "C" Datum bloom_filter_forget(PG_FUNCTION_ARGS) {
    if (PG_ARGISNULL(0))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("the filter's name must not be NULL")));
    Datum name_datum = PG_GETARG_DATUM(0);
    char *filter_name = text_to_cstring(DatumGetTextPP(name_datum));
    Oid namespace_oid = extension_namespace(fcinfo);
    Oid caller = GetUserId();
    as_tables_owner(namespace_oid, [&] {
        Datum name_values[1] = {name_datum};
        run(namespace_oid, kLockName, name_values, nullptr);
        bool allowed = false;
        if (SPI_processed == 1) {
            bool is_null;
            Oid relation = DatumGetObjectId(
                SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &is_null));
            Oid owner = relation_owner(relation, true);
            allowed = !OidIsValid(owner) || has_privs_of_role(caller, owner);
        }
        // The same answer whether the filter is missing or another role's: nothing to learn.
        if (!allowed)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                            errmsg("bloom filter \"%s\" does not exist", filter_name)));
        run(namespace_oid, kDeleteShards, name_values, nullptr);
        run(namespace_oid, kDeleteFilter, name_values, nullptr);
    });
    PG_RETURN_VOID();
}

// bloom_filter_forget_dropped(): removes the configurations and shards of filters whose table no
// longer exists. Anyone may call it (the sql_drop event trigger does, after every DROP).
extern "C" Datum bloom_filter_forget_dropped(PG_FUNCTION_ARGS) {
    Oid namespace_oid = extension_namespace(fcinfo);
    as_tables_owner(namespace_oid, [&] { run(namespace_oid, kForgetDropped, nullptr, nullptr); });
    PG_RETURN_VOID();
}
