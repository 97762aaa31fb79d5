"""Python clients against a server: psycopg 3 and psycopg2 directly, and SQLAlchemy's ORM
over each (what `tests/compat/python.rs` runs). Prints one line per check; the Rust test
compares them, and the same lines come from PostgreSQL 15 (`TEST_AGAINST_PG=1`).

Usage: orm_smoke.py PORT
"""
import datetime
import decimal
import sys
from typing import List, Optional

import psycopg
import psycopg2
from psycopg.types import TypeInfo
from sqlalchemy import ForeignKey, Numeric, String, Text, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

port = int(sys.argv[1])


def psycopg3_direct():
    with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres") as conn:
        # TypeInfo: what SQLAlchemy's psycopg dialect asks on connect (for hstore).
        info = TypeInfo.fetch(conn, "int4")
        print("typeinfo int4", info.oid, info.array_oid, info.regtype, info.delimiter)
        print("typeinfo hstore", TypeInfo.fetch(conn, "hstore"))
        conn.execute("DROP TABLE IF EXISTS py_items")
        conn.execute("CREATE TABLE py_items (id int PRIMARY KEY, name text, price numeric(8,2))")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO py_items VALUES (%s, %s, %s)",
                [(i, f"item {i}", decimal.Decimal(i) / 4) for i in range(1, 11)],
            )
            cur.execute("SELECT count(*), sum(price) FROM py_items WHERE id = ANY(%s)", [[2, 4, 6]])
            print("psycopg3 any", *cur.fetchone())
            cur.execute("SELECT name FROM py_items WHERE id = %s", (7,), prepare=True)
            cur.execute("SELECT name FROM py_items WHERE id = %s", (8,), prepare=True)
            print("psycopg3 prepared", cur.fetchone()[0])
        conn.commit()
        try:
            conn.execute("INSERT INTO py_items VALUES (1, 'again', 0)")
        except psycopg.errors.UniqueViolation as e:
            print("psycopg3 unique", e.sqlstate)
        conn.rollback()
        conn.execute("DROP TABLE py_items")
        conn.commit()


def psycopg2_direct():
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    cur = conn.cursor()
    cur.execute("SELECT %s::int + 1, %s::text, %s::date", (41, "it's", datetime.date(2024, 2, 29)))
    print("psycopg2 params", *cur.fetchone())
    conn.rollback()
    conn.close()


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "py_users"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    fullname: Mapped[Optional[str]]
    active: Mapped[bool] = mapped_column(default=True)
    balance: Mapped[decimal.Decimal] = mapped_column(Numeric(12, 2), default=0)
    created: Mapped[datetime.datetime] = mapped_column(server_default=func.now())
    addresses: Mapped[List["Address"]] = relationship(
        back_populates="user", cascade="all, delete-orphan", order_by="Address.id"
    )


class Address(Base):
    __tablename__ = "py_addresses"
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(Text, index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("py_users.id"))
    user: Mapped["User"] = relationship(back_populates="addresses")


def orm(driver):
    engine = create_engine(f"postgresql+{driver}://postgres@127.0.0.1:{port}/postgres")
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as s:
        s.add_all(
            [
                User(name="spongebob", fullname="Spongebob", addresses=[Address(email="sb@x.org")]),
                User(
                    name="sandy",
                    fullname="Sandy Cheeks",
                    addresses=[Address(email="sandy@x.org"), Address(email="sandy2@x.org")],
                ),
                User(name="patrick", fullname=None),
            ]
        )
        s.commit()
    with Session(engine) as s:
        query = select(User).where(User.name.in_(["spongebob", "sandy"])).order_by(User.id)
        for u in s.scalars(query):
            emails = ",".join(a.email for a in u.addresses)
            print(driver, "user", u.id, u.name, u.fullname, u.active, u.balance, emails)
        counts = s.execute(
            select(User.name, func.count(Address.id))
            .join(User.addresses, isouter=True)
            .group_by(User.name)
            .order_by(User.name)
        ).all()
        print(driver, "counts", counts)
        sandy = s.execute(select(User).filter_by(name="sandy")).scalar_one()
        sandy.balance += decimal.Decimal("10.50")
        s.delete(sandy.addresses[1])
        s.commit()
        print(driver, "sum", s.scalar(select(func.sum(User.balance))))
        s.delete(s.get(User, 1))
        s.commit()
        print(driver, "addresses", s.scalar(select(func.count()).select_from(Address)))
        created = s.scalar(select(User.created).where(User.name == "patrick"))
        print(driver, "created", type(created).__name__, created.tzinfo is None)
    Base.metadata.drop_all(engine)
    with engine.connect() as c:
        print(driver, "dropped", not engine.dialect.has_table(c, "py_users"))
    engine.dispose()


psycopg3_direct()
psycopg2_direct()
orm("psycopg")
orm("psycopg2")
