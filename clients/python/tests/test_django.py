"""bloomfilter.django with the Django Debian ships (3.2, psycopg2): the project in
tests/django_project, copied to a temporary directory, on a database of its own without the
extension. makemigrations writes the models' migration (BloomField, BloomfilterIndex) after the
hand-written one with BloomfilterExtension; migrate creates the extension and the indexes with
their options, and migrating back drops them. Then a BloomField round trip, the functions, the
signup view (index_contains, then the insert; the unique index refuses a duplicate), the
follower made at a process's first request, and the same under gunicorn --preload."""

import io
import os
import shutil
import sys
import time
import uuid

import pytest

django = pytest.importorskip("django", reason="Django is not installed (Debian: apt-get install python3-django)")

from bloomfilter import Filter  # noqa: E402
from bloomfilter.django import (BloomAdd, BloomAgg, BloomContains, BloomField,  # noqa: E402
                                BloomfilterIndex, IndexContains, close_followers, follower,
                                index_contains)
from gunicorn_workers import ask_every_worker, gunicorn  # noqa: E402

pytestmark = pytest.mark.server

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
INDEX = "accounts_user_email_bloom"
LOWER_INDEX = "accounts_user_email_lower_bloom"
MEMBER_INDEX = "accounts_member_bloom"  # (tenant_id, email)
MEMBER_LOWER_INDEX = "accounts_member_lower_bloom"  # (tenant_id, lower(email))
INTERVAL = 0.2  # the follower's, in django_project/accounts/apps.py


def admin_execute(sql):
    import psycopg2
    conn = psycopg2.connect(dbname="postgres")
    try:
        conn.autocommit = True
        with conn.cursor() as cursor:
            cursor.execute(sql)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project's directory, set up (django.setup()) and migrated, on a new database."""
    name = "bloomfilter_django_%s" % uuid.uuid4().hex[:12]
    admin_execute("CREATE DATABASE \"%s\" ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8' "
                  "TEMPLATE template0" % name)
    directory = tmp_path_factory.mktemp("django") / "project"
    shutil.copytree(os.path.join(HERE, "django_project"), directory)
    saved = {k: os.environ.get(k) for k in ("BLOOM_DJANGO_DB", "DJANGO_SETTINGS_MODULE")}
    os.environ.update(BLOOM_DJANGO_DB=name, DJANGO_SETTINGS_MODULE="bloomsite.settings")
    sys.path.insert(0, str(directory))
    try:
        django.setup()
        from django.core.management import call_command
        call_command("makemigrations", "accounts", verbosity=0)
        call_command("migrate", verbosity=0)
        yield directory
    finally:
        close_followers()
        from django.db import connections
        connections.close_all()
        sys.path.remove(str(directory))
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        admin_execute('DROP DATABASE "%s" WITH (FORCE)' % name)


def query(sql, params=()):
    from django.db import connection
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def new_emails(count, prefix="user"):
    """Emails of no user yet, which the email index's filter does not hold either (no false
    positive to start from)."""
    emails = []
    while len(emails) < count:
        email = "%s.%s@mail.com" % (prefix, uuid.uuid4().hex[:10])
        if not index_contains(INDEX, email):
            emails.append(email)
    return emails


# -- the index and the field, without a server ------------------------------------------------

def test_index_deconstructs_to_its_public_path():
    from django.db.models.functions import Lower
    index = BloomfilterIndex(fields=["email"], name="users_email_bloom", capacity=1000, error_rate=0.05)
    assert index.deconstruct() == ("bloomfilter.django.BloomfilterIndex", (),
                                   {"name": "users_email_bloom", "fields": ["email"],
                                    "capacity": 1000, "error_rate": 0.05})
    assert index.clone() == index
    assert index.get_with_params() == ["capacity = 1000", "error_rate = 0.05"]
    assert BloomfilterIndex(fields=["email"], name="x").get_with_params() == []
    expression = BloomfilterIndex(Lower("email"), name="users_email_lower_bloom")
    assert expression.deconstruct() == ("bloomfilter.django.BloomfilterIndex", (Lower("email"),),
                                        {"name": "users_email_lower_bloom"})
    assert BloomfilterIndex(fields=["email"], name="x", error_rate=1e-5).get_with_params() == ["error_rate = 1e-05"]
    assert BloomfilterIndex.suffix == "bloomfilter" and index.max_name_length == 38


def test_composite_index_deconstructs():
    from django.db.models import F
    from django.db.models.functions import Lower
    pair = BloomfilterIndex(fields=["tenant", "email"], name="members_bloom", capacity=1000)
    assert pair.deconstruct() == ("bloomfilter.django.BloomfilterIndex", (),
                                  {"name": "members_bloom", "fields": ["tenant", "email"],
                                   "capacity": 1000})
    assert pair.clone() == pair
    mixed = BloomfilterIndex(F("tenant"), Lower("email"), name="members_lower_bloom")
    assert mixed.deconstruct() == ("bloomfilter.django.BloomfilterIndex", (F("tenant"), Lower("email")),
                                   {"name": "members_lower_bloom"})
    assert len(BloomfilterIndex(fields=["f%d" % i for i in range(8)], name="x").fields) == 8


@pytest.mark.parametrize("arguments", [
    {"fields": ["f%d" % i for i in range(9)]}, {"fields": ["email", "-name"]}, {"fields": ["-email"]}, {"fields": ["email"], "capacity": 0},
    {"fields": ["email"], "capacity": 1.5}, {"fields": ["email"], "capacity": True},
    {"fields": ["email"], "error_rate": 1}, {"fields": ["email"], "error_rate": 0},
    {"fields": ["email"], "error_rate": float("nan")}, {"fields": ["email"], "error_rate": "0.01"},
])
def test_index_refuses(arguments):
    with pytest.raises(ValueError):
        BloomfilterIndex(name="x", **arguments)


def test_field_deconstructs_to_its_public_path():
    name, path, args, kwargs = BloomField(null=True).deconstruct()
    assert (path, args, kwargs) == ("bloomfilter.django.BloomField", [], {"null": True})
    assert BloomField(editable=True).deconstruct()[3] == {"editable": True}
    assert not BloomField().editable
    f = Filter.empty(100)
    f.add("a")
    assert BloomField().get_prep_value(f) == f.to_text()
    assert BloomField().to_python(f.to_text()) == f
    assert BloomField().to_python(f.to_bytes()) == f
    assert BloomField().to_python(f.to_text().encode()) == f
    assert BloomField().get_prep_value(None) is None
    with pytest.raises(TypeError):
        BloomField().get_prep_value(b"\x00")


def test_key_types_are_checked():
    with pytest.raises(TypeError):
        IndexContains(INDEX, True)
    with pytest.raises(TypeError):
        IndexContains(INDEX, 1.5)
    with pytest.raises(ValueError):
        IndexContains(INDEX, 1 << 63)
    with pytest.raises(TypeError):
        index_contains(42, "a@mail.com")
    with pytest.raises(TypeError):
        IndexContains(INDEX, (1, "a@mail.com"), "b@mail.com")
    with pytest.raises(ValueError):
        index_contains(INDEX, ())
    with pytest.raises(TypeError):
        index_contains(MEMBER_INDEX, 1, 1.5)


def test_subpackage_is_packaged():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(PACKAGE, "pyproject.toml"), "rb") as file:
        packages = tomllib.load(file)["tool"]["setuptools"]["packages"]
    found = sorted(os.path.relpath(root, PACKAGE).replace(os.sep, ".")
                   for root, _, files in os.walk(os.path.join(PACKAGE, "bloomfilter"))
                   if "__init__.py" in files)
    assert sorted(packages) == found == ["bloomfilter", "bloomfilter.django"]


# -- migrations ---------------------------------------------------------------------------------

def test_makemigrations_writes_the_field_and_the_indexes(project):
    from django.core.management import call_command
    written = (project / "accounts" / "migrations" / "0002_initial.py").read_text()
    assert "import bloomfilter.django\n" in written
    assert "('f', bloomfilter.django.BloomField(null=True))" in written
    assert ("index=bloomfilter.django.BloomfilterIndex(capacity=10000, error_rate=0.01, "
            "fields=['email'], name='accounts_user_email_bloom')") in written
    assert ("index=bloomfilter.django.BloomfilterIndex(django.db.models.functions.text.Lower('email'), "
            "name='accounts_user_email_lower_bloom')") in written
    assert ("index=bloomfilter.django.BloomfilterIndex(capacity=10000, error_rate=0.01, "
            "fields=['tenant', 'email'], name='accounts_member_bloom')") in written
    assert ("index=bloomfilter.django.BloomfilterIndex(django.db.models.expressions.F('tenant'), "
            "django.db.models.functions.text.Lower('email'), name='accounts_member_lower_bloom')") in written
    assert "('accounts', '0001_bloomfilter')" in written
    # The migration matches the models: nothing more to write (deconstruct() is stable).
    out = io.StringIO()
    call_command("makemigrations", "accounts", check=True, dry_run=True, stdout=out)
    assert "No changes detected" in out.getvalue()


def test_sqlmigrate(project):
    from django.core.management import call_command
    out = io.StringIO()
    call_command("sqlmigrate", "accounts", "0002", stdout=out)
    lines = out.getvalue().splitlines()
    assert ('CREATE INDEX "accounts_user_email_bloom" ON "accounts_user" USING bloomfilter '
            '("email") WITH (capacity = 10000, error_rate = 0.01);') in lines
    assert ('CREATE INDEX "accounts_user_email_lower_bloom" ON "accounts_user" USING bloomfilter '
            '((LOWER("email")));') in lines
    assert ('CREATE INDEX "accounts_member_bloom" ON "accounts_member" USING bloomfilter '
            '("tenant_id", "email") WITH (capacity = 10000, error_rate = 0.01);') in lines
    assert ('CREATE INDEX "accounts_member_lower_bloom" ON "accounts_member" USING bloomfilter '
            '("tenant_id", (LOWER("email")));') in lines
    assert any(line.startswith('CREATE TABLE "accounts_snapshot"') and '"f" bloom NULL' in line
               for line in lines), lines
    out = io.StringIO()
    call_command("sqlmigrate", "accounts", "0002", backwards=True, stdout=out)
    lines = out.getvalue().splitlines()
    assert 'DROP INDEX IF EXISTS "accounts_user_email_bloom";' in lines
    assert 'DROP INDEX IF EXISTS "accounts_user_email_lower_bloom";' in lines


def catalog():
    return (query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'accounts_user' "
                  "AND indexdef LIKE '%%USING bloomfilter%%' ORDER BY 1"),
            query("SELECT extname FROM pg_extension WHERE extname = 'bloomfilter'"))


def test_migrate_creates_the_extension_and_the_indexes(project):
    indexes, extension = catalog()
    assert indexes == [
        (INDEX, "CREATE INDEX accounts_user_email_bloom ON public.accounts_user USING bloomfilter "
                "(email) WITH (capacity='10000', error_rate='0.01')"),
        (LOWER_INDEX, "CREATE INDEX accounts_user_email_lower_bloom ON public.accounts_user USING "
                      "bloomfilter (lower((email)::text))"),
    ]
    assert extension == [("bloomfilter",)]
    assert query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'accounts_member' "
                 "AND indexdef LIKE '%%USING bloomfilter%%' ORDER BY 1") == [
        (MEMBER_INDEX, "CREATE INDEX accounts_member_bloom ON public.accounts_member USING bloomfilter "
                       "(tenant_id, email) WITH (capacity='10000', error_rate='0.01')"),
        (MEMBER_LOWER_INDEX, "CREATE INDEX accounts_member_lower_bloom ON public.accounts_member USING "
                             "bloomfilter (tenant_id, lower((email)::text))"),
    ]
    assert query("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                 "WHERE attrelid = 'accounts_snapshot'::regclass AND attname = 'f'") == [("bloom",)]


def test_migrating_back_drops_the_indexes_then_the_extension(project):
    from django.core.management import call_command
    from django.db import connection
    from accounts.models import User
    [index] = [i for i in User._meta.indexes if i.name == INDEX]
    # RemoveIndex's SQL, then AddIndex's again, as a later migration changing the index runs them.
    with connection.schema_editor() as editor:
        editor.remove_index(User, index)
    assert [name for name, _ in catalog()[0]] == [LOWER_INDEX]
    with connection.schema_editor() as editor:
        editor.add_index(User, index)
    assert [name for name, _ in catalog()[0]] == [INDEX, LOWER_INDEX]
    call_command("migrate", "accounts", "0001", verbosity=0)
    assert catalog() == ([], [("bloomfilter",)])
    call_command("migrate", "accounts", "zero", verbosity=0)
    assert catalog() == ([], [])
    call_command("migrate", verbosity=0)
    indexes, extension = catalog()
    assert [name for name, _ in indexes] == [INDEX, LOWER_INDEX] and extension == [("bloomfilter",)]


# -- the field and the functions ------------------------------------------------------------------

def test_bloom_field_round_trip(project):
    from django.core import serializers
    from accounts.models import Snapshot
    f = Filter.empty(1000, 0.01)
    f.update(["a@mail.com", "b@mail.com", 42, b"\x00\x01", uuid.UUID(int=7)])
    name = uuid.uuid4().hex
    Snapshot.objects.create(name=name, f=f)
    Snapshot.objects.create(name=name + "-null", f=None)
    loaded = Snapshot.objects.get(name=name)
    assert isinstance(loaded.f, Filter) and loaded.f == f and loaded.f is not f
    assert all(k in loaded.f for k in ["a@mail.com", "b@mail.com", 42, b"\x00\x01", uuid.UUID(int=7)])
    assert Snapshot.objects.get(name=name + "-null").f is None
    # The server holds a bloom it validated: its bytes are the filter's.
    assert query("SELECT f::bytea FROM accounts_snapshot WHERE name = %s", [name])[0][0].tobytes() == f.to_bytes()
    assert list(Snapshot.objects.filter(f=f).values_list("name", flat=True)) == [name]
    assert list(Snapshot.objects.filter(name=name).values_list("f", flat=True)) == [f]
    # save() and bulk_update() write a changed filter.
    loaded.f.add("c@mail.com")
    loaded.save()
    assert "c@mail.com" in Snapshot.objects.get(name=name).f
    loaded.f.add("d@mail.com")
    Snapshot.objects.bulk_update([loaded], ["f"])
    assert Snapshot.objects.get(name=name).f == loaded.f
    # dumpdata/loaddata: the text form.
    data = serializers.serialize("json", [loaded])
    [restored] = serializers.deserialize("json", data)
    assert restored.object.f == loaded.f
    # A value the server refuses is refused.
    from django.db import DataError, transaction
    broken = Filter(f.to_bytes())
    broken._data[0] ^= 0xFF  # the magic number
    with pytest.raises(DataError), transaction.atomic():
        Snapshot.objects.filter(name=name).update(f=broken)


def test_bloom_field_reads_a_layered_value(project):
    """The filter of an index made with no options (accounts_user_email_lower_bloom) is a layered
    value (format version 3): a BloomField reads it as a LayeredFilter, which refuses add(), and
    writes it back as it is."""
    from bloomfilter import LayeredFilter
    from accounts.models import Snapshot
    name = uuid.uuid4().hex
    Snapshot.objects.create(name=name, f=None)
    query("UPDATE accounts_snapshot SET f = bloom_index_filter('accounts_user_email_lower_bloom') "
          "WHERE name = %s RETURNING 1", [name])
    loaded = Snapshot.objects.get(name=name)
    assert isinstance(loaded.f, LayeredFilter)
    data = query("SELECT f::bytea FROM accounts_snapshot WHERE name = %s", [name])[0][0].tobytes()
    assert loaded.f.to_bytes() == data
    with pytest.raises(ValueError, match="layered bloom value"):
        loaded.f.add("new@mail.com")
    loaded.save()
    assert Snapshot.objects.get(name=name).f == loaded.f


def test_functions(project):
    from django.db.models import F
    from accounts.models import Snapshot, User
    emails = new_emails(20, "agg")
    User.objects.bulk_create([User(email=e) for e in emails])
    aggregated = User.objects.filter(email__in=emails).aggregate(f=BloomAgg("email", 1000, 0.02))["f"]
    assert isinstance(aggregated, Filter)
    assert (aggregated.capacity, aggregated.error_rate, aggregated.inserted) == (1000, 0.02, 20)
    assert all(e in aggregated for e in emails)
    sized = User.objects.filter(email__in=emails).aggregate(f=BloomAgg("email"))["f"]
    assert sized.capacity == 20 and sized.error_rate == 0.01 and all(e in sized for e in emails)
    assert User.objects.filter(email="nobody").aggregate(f=BloomAgg("email"))["f"] is None

    name = uuid.uuid4().hex
    Snapshot.objects.create(name=name, f=aggregated)
    Snapshot.objects.filter(name=name).update(f=BloomAdd("f", "new@mail.com"))
    assert "new@mail.com" in Snapshot.objects.get(name=name).f
    # Python keys cast to the types the client hashes them as.
    Snapshot.objects.filter(name=name).update(f=BloomAdd(BloomAdd(BloomAdd("f", 42), b"\x00\x01"), uuid.UUID(int=9)))
    stored = Snapshot.objects.get(name=name).f
    assert all(k in stored for k in (42, b"\x00\x01", uuid.UUID(int=9)))
    row = Snapshot.objects.filter(name=name).values(
        text=BloomContains("f", emails[0]), number=BloomContains("f", 42),
        binary=BloomContains("f", b"\x00\x01"), key_uuid=BloomContains("f", uuid.UUID(int=9)),
        column=BloomContains("f", F("name")), literal=BloomContains(stored, "new@mail.com")).get()
    assert row == {"text": True, "number": True, "binary": True, "key_uuid": True,
                   "column": False, "literal": True}
    ghosts = ["ghost%d@mail.com" % i for i in range(20)]
    answers = [Snapshot.objects.filter(name=name).values_list(BloomContains("f", g), flat=True).get()
               for g in ghosts]
    assert answers == [g in stored for g in ghosts]  # the server and the client agree


def test_index_contains(project):
    from django.db.models import F
    from accounts.models import Invite, User
    registered = new_emails(5, "in")
    unregistered = new_emails(5, "out")
    User.objects.bulk_create([User(email=e) for e in registered])
    Invite.objects.bulk_create([Invite(email=e) for e in registered + unregistered])
    assert all(index_contains(INDEX, e) for e in registered)
    assert not any(index_contains(INDEX, e) for e in unregistered)  # chosen so
    assert index_contains(INDEX, None) is None
    # The expression index applies lower() to the key.
    assert all(index_contains(LOWER_INDEX, e.upper()) for e in registered)
    assert sum(index_contains(INDEX, "ghost%d@mail.com" % i) for i in range(200)) < 20
    ours = Invite.objects.filter(email__in=registered + unregistered)
    matched = ours.filter(IndexContains(INDEX, F("email")))
    assert sorted(matched.values_list("email", flat=True)) == sorted(registered)
    assert sorted(ours.exclude(IndexContains(INDEX, F("email"))).values_list("email", flat=True)) \
        == sorted(unregistered)
    assert ('bloom_index_contains(CAST(accounts_user_email_bloom AS text), "accounts_invite"."email")'
            in str(matched.query))
    annotated = dict(ours.annotate(registered=IndexContains(INDEX, F("email")))
                     .values_list("email", "registered"))
    assert annotated == {**{e: True for e in registered}, **{e: False for e in unregistered}}
    # A constant key, checked in a query.
    assert list(User.objects.annotate(taken=IndexContains(INDEX, registered[0])).values_list(
        "taken", flat=True)[:1]) == [True]


def test_composite_index_contains(project):
    """A (tenant_id, email) index: the values in column order, as several values or one tuple;
    the same email in another tenant is absent."""
    from django.db.models import F
    from accounts.models import Member, Tenant
    t1 = Tenant.objects.create(name="t1-" + uuid.uuid4().hex)
    t2 = Tenant.objects.create(name="t2-" + uuid.uuid4().hex)
    emails = []
    while len(emails) < 5:  # none of them present for t2 by a false positive: chosen so
        email = "member.%s@mail.com" % uuid.uuid4().hex[:10]
        if not index_contains(MEMBER_INDEX, t2.pk, email):
            emails.append(email)
    Member.objects.bulk_create([Member(tenant=t1, email=e) for e in emails])
    assert all(index_contains(MEMBER_INDEX, t1.pk, e) for e in emails)
    assert all(index_contains(MEMBER_INDEX, (t1.pk, e)) for e in emails)
    assert not any(index_contains(MEMBER_INDEX, t2.pk, e) for e in emails)
    assert index_contains(MEMBER_INDEX, t1.pk, None) is None
    # The (tenant, lower(email)) index applies lower() to the second value only.
    assert all(index_contains(MEMBER_LOWER_INDEX, t1.pk, e.upper()) for e in emails)
    assert sum(index_contains(MEMBER_INDEX, t1.pk, "ghost%d@mail.com" % i) for i in range(200)) < 20
    # The wrong number of values is an error, never an answer.
    from django.db import DataError, ProgrammingError, transaction
    with pytest.raises((DataError, ProgrammingError)), transaction.atomic():
        index_contains(MEMBER_INDEX, emails[0])
    # In a query: each member checked in the other tenant, then in its own.
    ours = Member.objects.filter(email__in=emails)
    own = dict(ours.annotate(present=IndexContains(MEMBER_INDEX, F("tenant"), F("email")))
               .values_list("email", "present"))
    assert own == {e: True for e in emails}
    other = dict(ours.annotate(present=IndexContains(MEMBER_INDEX, t2.pk, F("email")))
                 .values_list("email", "present"))
    assert other == {e: False for e in emails}
    assert ours.filter(IndexContains(MEMBER_INDEX, (F("tenant"), F("email")))).count() == 5


def test_signup_view(project):
    from django.db import IntegrityError, connection, transaction
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from accounts.models import User
    client = Client()
    [email] = new_emails(1, "signup")
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/signup", {"email": email})
    assert (response.status_code, response.content) == (201, b"created")
    sql = [q["sql"] for q in queries.captured_queries]
    # The filter said "absent": no lookup in the table before the insert.
    assert sql[0] == "SELECT bloom_index_contains('%s'::text, '%s'::text)" % (INDEX, email)
    assert not any(s.startswith("SELECT") and '"accounts_user"' in s for s in sql), sql
    assert any(s.startswith('INSERT INTO "accounts_user"') for s in sql), sql
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/signup", {"email": email})
    assert (response.status_code, response.content) == (409, b"taken")
    assert any('FROM "accounts_user"' in q["sql"] for q in queries.captured_queries)
    assert User.objects.filter(email=email).count() == 1
    # Past the check (a concurrent signup), the unique index refuses the duplicate.
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create(email=email)


def test_follower_made_at_the_first_request(project):
    from django.test import Client
    from accounts.models import User
    close_followers()
    client = Client()
    [email] = new_emails(1, "follow")
    response = client.get("/taken", {"email": email})
    assert response.content.decode() == "%d 0" % os.getpid()
    made = follower(INDEX)
    assert made is follower(INDEX, interval=INTERVAL, max_lag=5)  # apps.py's options
    assert (made.interval, made.max_lag) == (INTERVAL, 5)
    with pytest.raises(ValueError):
        follower(INDEX, interval=1)
    User.objects.create(email=email)
    made.refresh()
    assert made.contains(email)
    assert client.get("/taken", {"email": email}).content.decode() == "%d 1" % os.getpid()
    # Connected as Django is, to the project's database, on a connection of its own.
    from django.db import connection
    assert made.backend_pid not in (None, query("SELECT pg_backend_pid()")[0][0])
    assert query("SELECT datname FROM pg_stat_activity WHERE pid = %s", [made.backend_pid]) \
        == [(connection.settings_dict["NAME"],)]
    close_followers()
    assert made._closed and made._thread is None
    assert follower(INDEX) is not made


# -- gunicorn --preload -----------------------------------------------------------------------------

def answers_of_every_worker(port, email, workers):
    """{worker pid: [its answers for email, True for taken]}."""
    return {pid: [words[0] == "1" for words in answers]
            for pid, answers in ask_every_worker(port, "/taken?email=" + email, workers).items()}


@pytest.mark.parametrize("shared", [False, True], ids=["own", "shared"])
def test_gunicorn_preload(project, shared):
    """ready() runs in gunicorn's master (--preload), which makes no follower; each worker makes
    its own at its first request and finds a new user within two intervals. Shared
    (BLOOMFILTER_FOLLOWER_SHARED): one of them is the writer, the only one connected."""
    pytest.importorskip("gunicorn")  # test/run-python.sh requires it
    from accounts.models import User
    close_followers()  # this process's
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(project), PACKAGE]),
               BLOOM_DJANGO_SHARED="1" if shared else "0")
    with gunicorn("bloomsite.wsgi:application", 2, str(project), env, probe="/taken?email=x@mail.com",
                  timeout=20) as (server, port):
        [email] = new_emails(1, "gunicorn")
        before = answers_of_every_worker(port, email, 2)
        assert len(before) == 2 and server.pid not in before, before
        assert not any(any(a) for a in before.values()), before
        # One follower connection per worker, none for the master; shared, the writer's alone.
        # (Every query of a follower ends with the column pg_backend_pid().)
        assert query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                     "AND query LIKE '%%pg_catalog.pg_backend_pid()%%' AND pid <> pg_backend_pid()")[0][0] \
            == (1 if shared else 2)
        User.objects.create(email=email)
        time.sleep(2 * INTERVAL)
        after = answers_of_every_worker(port, email, 2)
        assert set(after) == set(before) and all(all(a) for a in after.values()), after


def test_shared_follower_by_setting(project):
    """BLOOMFILTER_FOLLOWER_SHARED = True: follower() is a SharedIndexFollower (the first in the
    host's copy is its writer), connected as Django is; shared=False in the call overrides it."""
    from django.test import override_settings
    from django.test import Client
    from accounts.models import User
    from bloomfilter.shared import SharedIndexFollower
    close_followers()
    try:
        with override_settings(BLOOMFILTER_FOLLOWER_SHARED=True):
            client = Client()
            [email] = new_emails(1, "shared")
            assert client.get("/taken", {"email": email}).content.decode() == "%d 0" % os.getpid()
            made = follower(INDEX)
            assert isinstance(made, SharedIndexFollower) and made.writer
            assert made.path.startswith("/dev/shm/bloomfilter-")
            User.objects.create(email=email)
            made.refresh()
            assert client.get("/taken", {"email": email}).content.decode() == "%d 1" % os.getpid()
            assert not isinstance(follower(LOWER_INDEX, shared=False), SharedIndexFollower)
    finally:
        close_followers()
    assert not os.path.exists(made.path)
