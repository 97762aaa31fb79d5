"""Django against a server (what `tests/compat/python.rs` runs): `migrate` of the contenttypes
and auth apps and of an app without migrations (CREATE TABLE, indexes, DEFERRABLE INITIALLY
DEFERRED foreign keys, the introspection queries), then the ORM — bulk_create (INSERT … SELECT
FROM unnest), annotate(Count) (GROUP BY the primary key), F() updates, select_for_update,
savepoints around an IntegrityError, auth users, JSONField. Prints one line per check.

Usage: django_smoke.py PORT
"""
import os
import sys

import django
from django.conf import settings

port = int(sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
settings.configure(
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "postgres",
            "USER": "postgres",
            "HOST": "127.0.0.1",
            "PORT": port,
        }
    },
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "djapp"],
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    USE_TZ=True,
)
django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import IntegrityError, connection, transaction  # noqa: E402
from django.db.models import Count, F, Q, Sum  # noqa: E402

from djapp.models import Author, Book  # noqa: E402

call_command("migrate", verbosity=0, interactive=False, run_syncdb=True)
print("tables", sorted(t for t in connection.introspection.table_names() if t.startswith("djapp")))
Book.objects.all().delete()
Author.objects.all().delete()
User.objects.filter(username="joe").delete()
ann = Author.objects.create(name="Ann", email="ann@x.org")
bob = Author.objects.create(name="Bob", email="bob@x.org")
Book.objects.bulk_create(
    [
        Book(title=f"T{i}", author=ann if i % 2 else bob, pages=100 + i, meta={"i": i})
        for i in range(10)
    ]
)
print("counts", list(Author.objects.annotate(n=Count("book")).order_by("name").values_list("name", "n")))
print("filters", Book.objects.filter(title__icontains="t1").count(), Book.objects.filter(meta__i__gte=5).count())
Book.objects.filter(author=ann).update(pages=F("pages") + 1)
print("sum", Book.objects.aggregate(Sum("pages")))
with transaction.atomic():
    Author.objects.select_for_update().get(name="Ann")
    try:
        with transaction.atomic():
            Author.objects.create(name="Ann2", email="ann@x.org")
    except IntegrityError:
        print("duplicate refused")
    Author.objects.filter(name="Bob").update(name="Robert")
print("authors", list(Author.objects.order_by("id").values_list("name", flat=True)))
User.objects.create_user("joe", "joe@x.org", "pw")
print("user", User.objects.filter(username="joe").exists(), User.objects.get(username="joe").check_password("pw"))
top = Book.objects.filter(Q(pages__gt=105) | Q(title="T0")).order_by("-pages", "title")
print("top", list(top.values_list("title", flat=True)[:3]))
ann.delete()
print("cascade", Book.objects.count())
