"""`dialerapi caller-ids` (docs/operations/caller-ids.md): the operator adds, imports, lists, shows,
sets, flags and retires the floor's numbers; a bad row of an import goes to the rejects file with
its line, field and error, and the others are added."""

import csv
import json

from conftest import DEFAULT_NOW, TZ
from dialerapi.rules.dialing import claims


def test_add_show_set_flag_and_retire_through_the_command(command, sql):
    added = command("caller-ids", "add", "+19195550100", "--pool", "raleigh", "--pool", "east", "--daily-cap", "60")
    assert added.exit_code == 0, added.output
    assert json.loads(added.output)["pools"] == ["east", "raleigh"]
    again = command("caller-ids", "add", "+19195550100", "--pool", "other")
    assert again.exit_code == 0 and "nothing changed" in again.output
    assert command("caller-ids", "set", "+19195550100", "--daily-cap", "floor").exit_code == 0
    assert command("caller-ids", "flag", "+19195550100", "--note", "Spam Likely").exit_code == 0
    listed = command("caller-ids", "list", "--state", "flagged")
    assert "+19195550100" in listed.output and "flagged" in listed.output and "floor" in listed.output
    assert command("caller-ids", "set", "+19195550100", "--active").exit_code == 0
    retired = command("caller-ids", "retire", "+19195550100")
    assert json.loads(retired.output)["state"] == "retired"
    shown = json.loads(command("caller-ids", "show", "+19195550100").output)
    assert [change["action"] for change in shown["history"]] == ["retired", "updated", "flagged", "updated", "added"]
    assert {change["changed_by"] for change in shown["history"]} == {"cli"}
    refused = command("caller-ids", "set", "+19195550100", "--active")
    assert refused.exit_code == 1 and "never presented again" in refused.output


def test_an_unknown_or_wrong_number_is_named(command):
    unknown = command("caller-ids", "flag", "+19195550199")
    assert unknown.exit_code == 1 and "+19195550199" in unknown.output
    wrong = command("caller-ids", "add", "919555", "--pool", "raleigh")
    assert wrong.exit_code == 1 and "number: must be a valid phone number in E.164" in wrong.output


def test_an_import_adds_the_good_rows_and_rejects_each_bad_one_with_its_line(command, sql, tmp_path):
    path = tmp_path / "numbers.csv"
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["number", "pools", "daily_cap", "note"])
        for n in range(1200):
            writer.writerow([f"+1919555{n:04d}", "raleigh;nc" if n % 2 else "", "", f"row {n}"])
        writer.writerow(["12345", "raleigh", "", ""])
        writer.writerow(["+13055550100", "Miami", "", ""])
        writer.writerow(["+13055550101", "miami", "lots", ""])
        writer.writerow(["+19195550000", "raleigh", "", "again"])
    result = command("caller-ids", "import", str(path), "--pool", "east")
    assert result.exit_code == 0, result.output
    counts = json.loads(result.output)
    assert {name: counts[name] for name in ("rows", "added", "already", "rejected")} == {
        "rows": 1204, "added": 1200, "already": 1, "rejected": 3}
    with open(counts["rejects"], newline="") as file:
        rejects = [row[:3] for row in csv.reader(file)]
    assert rejects[0] == ["line", "field", "error"]
    assert [(line, field) for line, field, _ in rejects[1:]] == [("1202", "number"), ("1203", "pools"),
                                                                  ("1204", "daily_cap")]
    pools = sql("SELECT pool, COUNT(*) AS n FROM dialerapi_caller_id_pools GROUP BY pool ORDER BY pool")
    assert [(row["pool"], row["n"]) for row in pools] == [("east", 600), ("nc", 600), ("raleigh", 600)]


def test_the_floor_settings_of_caller_ids_are_set_checked_and_held_by_the_claim(command, sql, run, new_lead,
                                                                                floor_agent):
    """`dialerapi config set caller_id_daily_cap=...`: the cap of a number without its own."""
    assert command("caller-ids", "add", "+19195550100", "--pool", "nc").exit_code == 0
    result = command("config", "set", "caller_id_daily_cap=1", "caller_id_default_pool=nc",
                     "caller_id_headroom_share=0.25")
    assert result.exit_code == 0, result.output
    assert sql.one("SELECT caller_id_daily_cap, caller_id_default_pool, caller_id_headroom_share"
                   " FROM sales_dialer_config") == {"caller_id_daily_cap": 1, "caller_id_default_pool": "nc",
                                                    "caller_id_headroom_share": 0.25}
    floor_agent(501)
    floor_agent(502)
    new_lead("RALEIGH-1", phone_number="+1 919 555 1234")
    new_lead("RALEIGH-2", phone_number="+1 919 555 4321")
    first = run(claims.claim_next, 501, DEFAULT_NOW, tz=TZ)
    assert first["caller_id_choice"] == {"number": "+19195550100", "pool": "nc", "match": "area_code"}
    assert run(claims.claim_next, 502, DEFAULT_NOW, tz=TZ) is None, "the number presented the floor's cap of 1"
    for setting, named in (("caller_id_daily_cap=0", "caller_id_daily_cap"),
                           ("caller_id_default_pool=No Pool", "caller_id_default_pool"),
                           ("caller_id_headroom_share=2", "caller_id_headroom_share")):
        refused = command("config", "set", setting)
        assert refused.exit_code == 2 and named in refused.output, refused.output
    assert sql.one("SELECT caller_id_daily_cap FROM sales_dialer_config")["caller_id_daily_cap"] == 1
