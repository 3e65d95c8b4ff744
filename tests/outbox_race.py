"""Writers committing dialerapi_outbox rows out of id order while readers tail it (issue #19):
shared by tests/test_outbox.py (one node) and tests/galera (writers on two nodes)."""

import random
import threading
import time
from datetime import datetime

from dialerapi.plumbing.db import queries
from dialerapi.rules.events import outbox

NOW = datetime(2026, 11, 23, 10, 0, 0)
ROWS_PER_TRANSACTION = 20


class NaiveTail:
    """The reader before issue #19 (`id > last_id`), to show that the race skips rows it cannot see."""

    def __init__(self):
        self.last_id = None

    def poll(self, db):
        if self.last_id is None:
            self.last_id = db.run(queries.outbox_last_id)
            return []
        rows = db.run(lambda conn: list(queries.outbox_after(conn, last_id=self.last_id, max_rows=100000)))
        if rows:
            self.last_id = rows[-1]["id"]
        return rows


def race(writer_dbs, reader_db, total_rows, writers=16, max_hold_seconds=0.004, seed=19):
    """`writers` threads (spread over `writer_dbs`) insert `total_rows` outbox rows, 20 a transaction,
    each holding its transaction open a random 0..max_hold_seconds after the insert; an OutboxTail
    and a NaiveTail poll `reader_db` meanwhile and after. Returns (ids committed, ids the OutboxTail
    returned as a list, ids the NaiveTail returned)."""
    tail, naive = outbox.OutboxTail(rescan_seconds=0.2), NaiveTail()
    tail.poll(reader_db), naive.poll(reader_db)
    committed, errors = [], []
    lock = threading.Lock()
    done = threading.Event()
    transactions = total_rows // ROWS_PER_TRANSACTION
    barrier = threading.Barrier(writers)

    def write(index):
        rng = random.Random(seed * 1000 + index)
        db = writer_dbs[index % len(writer_dbs)]

        def transaction(conn, hold):
            outbox.notify(conn, [index * 100 + k for k in range(ROWS_PER_TRANSACTION)], NOW)
            # A multi-row insert takes ids a step apart: 1 on one node, the cluster's size on Galera.
            (row,) = conn_query(conn, "SELECT LAST_INSERT_ID() AS first, @@auto_increment_increment AS step")
            time.sleep(hold)
            return range(row["first"], row["first"] + row["step"] * ROWS_PER_TRANSACTION, row["step"])

        try:
            barrier.wait(timeout=30)
            for _ in range(transactions // writers + (index < transactions % writers)):
                ids = db.run(transaction, rng.uniform(0, max_hold_seconds))
                with lock:
                    committed.extend(ids)
        except Exception as exc:  # reported by the caller's assertion on errors
            errors.append(exc)

    delivered, naive_delivered = [], []

    def read():
        while not done.is_set():
            delivered.extend(row["id"] for row in tail.poll(reader_db))
            naive_delivered.extend(row["id"] for row in naive.poll(reader_db))
            done.wait(0.05)

    reader = threading.Thread(target=read)
    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    done.set()
    reader.join(timeout=60)
    assert errors == [], errors[:3]
    # Catch up after every writer committed: polls until two in a row, each with a rescan, find nothing.
    empty = 0
    while empty < 2:
        time.sleep(0.25)
        rows = tail.poll(reader_db)
        delivered.extend(row["id"] for row in rows)
        naive_delivered.extend(row["id"] for row in naive.poll(reader_db))
        empty = 0 if rows else empty + 1
    return committed, delivered, naive_delivered


def conn_query(conn, statement):
    with conn.cursor() as cur:
        cur.execute(statement)
        return cur.fetchall()
