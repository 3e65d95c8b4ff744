"""The caller-ID pools watched (docs/operations/caller-ids.md "Watched"; rules.caller_ids.pools):
each pool's numbers by state and today's headroom on /engine/floor, /health and /metrics; /health
names a pool under caller_id_headroom_share and answers 503 for one a campaign presents from with
no active number; a claim's caller ID is counted in dialerapi_caller_id_presented_total."""

from datetime import timedelta

from conftest import DEFAULT_NOW, ENGINE_SECRET, set_presented
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.campaigns import operations

NOW = DEFAULT_NOW
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}


def add(run, number, pools, **options):
    run(numbers.add, number, pools, NOW, "cli", **options)


def presented_today(sql, number, calls):
    set_presented(sql, number, calls, NOW.date())


def test_each_pool_today_on_the_floor_health_and_metrics(run, sql, client, auth, floor_agent, new_lead):
    floor_agent(501, skills=("home_loan", "card"))
    for n in range(3):
        add(run, f"+1919555010{n}", ["raleigh"], daily_cap=10)
    add(run, "+19195550109", ["raleigh"])
    run(numbers.change, "+19195550109", {"state": "flagged"}, NOW, "cli")
    presented_today(sql, 19195550100, 10)
    presented_today(sql, 19195550101, 9)
    set_presented(sql, 19195550102, 10, (NOW - timedelta(days=1)).date())  # yesterday's calls: 10 left today
    run(operations.update, "home_loan", {"caller_id_pool": "raleigh"}, NOW, "cli")
    new_lead("HOME-1", phone_number="+1 919 555 1234")

    floor = client.post("/engine/floor", headers=ENGINE, json={}).get_json()
    [raleigh] = [pool for pool in floor["caller_id_pools"] if pool["pool"] == "raleigh"]
    assert {name: raleigh[name] for name in ("active", "at_cap", "flagged", "retired", "capacity_today",
                                             "headroom_today", "used_by", "low", "empty")} == {
        "active": 3, "at_cap": 1, "flagged": 1, "retired": 0, "capacity_today": 30, "headroom_today": 11,
        "used_by": ["home_loan"], "low": False, "empty": False}
    [home] = [row for row in floor["form_types"] if row["form_type"] == "home_loan"]
    assert home["caller_id"] == {"pool": "raleigh", "headroom_today": 11, "headroom_share": round(11 / 30, 4)}
    [card] = [row for row in floor["form_types"] if row["form_type"] == "card"]
    assert card["caller_id"]["pool"] == "default", "card presents from the floor's default pool"

    health = client.get("/health", headers=auth)
    assert health.status_code == 503, "card's pool, the default, has no number"
    check = health.get_json()["checks"]["caller_ids"]
    assert check["ok"] is False and check["empty"] == ["default"] and "default" in check["error"]
    add(run, "+13055550100", ["default"])
    presented_today(sql, 19195550102, 9)  # raleigh: 2 of 30 left, under 10%
    health = client.get("/health", headers=auth)
    assert health.status_code == 200
    assert health.get_json()["checks"]["caller_ids"] == {"ok": True, "empty": [], "low": ["raleigh"], "error": None}

    metrics = client.get("/metrics", headers=auth).get_data(as_text=True)
    assert 'dialerapi_caller_id_headroom{pool="raleigh"} 2.0' in metrics
    assert 'dialerapi_caller_ids{pool="raleigh",state="at_cap"} 1.0' in metrics
    counted = presented_counter(client, auth, "raleigh", "area_code")
    claimed = client.post("/engine/claim", headers=ENGINE, json={"mode": "progressive", "agent_id": 501,
                                                                "request_id": "m-1"}).get_json()
    assert claimed["caller_id"] == {"number": "+19195550101", "pool": "raleigh", "match": "area_code"}, \
        "0101 and 0102 have one call left each: the lowest id"
    assert presented_counter(client, auth, "raleigh", "area_code") == counted + 1
    again = client.post("/engine/claim", headers=ENGINE, json={"mode": "progressive", "agent_id": 501,
                                                              "request_id": "m-1"}).get_json()
    assert again == claimed, "the engine's retry of a claim gets the stored answer"
    assert presented_counter(client, auth, "raleigh", "area_code") == counted + 1, "and is not counted again"


def presented_counter(client, auth, pool, match):
    """dialerapi_caller_id_presented_total{pool, match} as /metrics answers it now (0 before the first)."""
    line = f'dialerapi_caller_id_presented_total{{match="{match}",pool="{pool}"}} '
    text = client.get("/metrics", headers=auth).get_data(as_text=True)
    found = [float(row[len(line):]) for row in text.splitlines() if row.startswith(line)]
    return found[0] if found else 0.0


def test_a_floor_without_caller_ids_shows_no_pool(client, auth, floor_agent):
    floor_agent(501)
    floor = client.post("/engine/floor", headers=ENGINE, json={}).get_json()
    assert floor["caller_id_pools"] == [] and all(row["caller_id"] is None for row in floor["form_types"])
    assert client.get("/health", headers=auth).get_json()["checks"]["caller_ids"]["ok"] is True
