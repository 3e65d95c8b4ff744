"""No socket event is skipped (issue #19, finding 5): events.OutboxTail returns every outbox row
once, although rows commit out of id order (ids are taken at INSERT, rows appear at COMMIT)."""

import pytest

from dialerapi.plumbing.db import Database
from dialerapi.rules.events.outbox import OutboxTail
from outbox_race import race


@pytest.mark.long
@pytest.mark.slow
def test_sixteen_writers_committing_out_of_order_lose_no_row_in_100000(database_url):
    writer_db, reader_db = Database(database_url, pool_size=16), Database(database_url, pool_size=1)
    try:
        committed, delivered, naive = race([writer_db], reader_db, total_rows=100_000)
    finally:
        writer_db.close(), reader_db.close()
    assert len(committed) == 100_000
    assert sorted(delivered) == sorted(committed), "every committed row delivered exactly once"
    # The race is real: the reader before #19 skipped rows here.
    assert len(set(committed) - set(naive)) > 0


def test_a_row_is_looked_for_again_only_within_the_window(database_url, sql):
    elapsed = [0.0]
    tail = OutboxTail(window_seconds=120, rescan_seconds=2, monotonic=lambda: elapsed[0])
    db = Database(database_url, pool_size=1)
    try:
        def insert(row_id, agent_id):
            sql("INSERT INTO dialerapi_outbox (id, agent_id, created_at) VALUES (%s, %s, '2026-11-23 10:00:00')",
                row_id, agent_id)

        assert tail.poll(db) == []
        first = tail.high + 1
        late = first + 1
        insert(first, 1)
        insert(first + 2, 3)  # commits before the row with the id below it
        assert [row["id"] for row in tail.poll(db)] == [first, first + 2]
        insert(late, 9)
        elapsed[0] = 1.0
        assert tail.poll(db) == [], "not read again before the rescan interval"
        elapsed[0] = 2.0
        assert tail.poll(db) == [{"id": late, "agent_id": 9}], "the late row is found by the rescan"
        elapsed[0] = 4.0
        assert tail.poll(db) == [], "and returned once"
        elapsed[0] = 200.0
        tail.poll(db)
        assert tail.low == first + 2 and tail.delivered == set(), "the window moved on"
    finally:
        db.close()
