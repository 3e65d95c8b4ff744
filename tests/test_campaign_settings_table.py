"""A campaign's settings are declared once (rules.config.campaign_settings.SETTINGS) and the schema,
the stored form, the overrides and the effective view are built from that table
(docs/operations/campaigns.md lists each setting)."""

import dataclasses
from datetime import time

from dialerapi.rules.config import campaign_settings
from dialerapi.rules.config.campaign_settings import CALENDAR_SETTINGS, SETTINGS, CampaignSettingsSchema
from dialerapi.rules.config.dialer import DialerConfig

FLOOR = DialerConfig(isMaintainance=False, outbound_obey_work_hours=False, retry_pattern=(4, 4, 3, 2, 1),
                     retry_seconds=1800, max_tries=10, work_start=time(9), work_end=time(21),
                     disposed_priority_id=3)
EVERY_SETTING = {
    "open_hours": {"mon": ["09:00-12:00", "13:00-18:00"]}, "restricted_dates": [{"date": "2026-12-25", "note": "Christmas"}],
    "start_date": "2026-11-01", "end_date": "2027-01-31", "enforce_abandon_limit": False, "abandon_limit": 0.05,
    "abandon_period": "24h", "abandon_min_answered": 10, "abandon_connect_seconds": 3,
    "amd_false_positive_share": 0.1, "retry_pattern": [2, 1], "retry_seconds": 600, "max_tries": 4,
    "outcome_retries": {"busy": {"delay_seconds": 900}}, "obey_calling_window": True,
    "calling_window_start": "08:00", "calling_window_end": "20:00", "personal_callback_fallback_minutes": "never",
    "phone_default_region": "GB", "predictive": False, "consent_required": "automated",
    "caller_id_pool": "raleigh", "caller_id_match": ["area_code", "pool"], "caller_id_fallback": "default",
    "caller_id_default": "+19195550100", "caller_id_sticky": True,
}


def test_the_schema_and_the_effective_view_are_the_tables():
    assert list(CampaignSettingsSchema().fields) == list(SETTINGS) == list(EVERY_SETTING)
    assert list(campaign_settings.effective(FLOOR)) == [
        *SETTINGS][:len(CALENDAR_SETTINGS)] + ["work_start", "work_end"] + [*SETTINGS][len(CALENDAR_SETTINGS):]
    config_fields = {field.name for field in dataclasses.fields(DialerConfig)}
    assert {name for name, setting in SETTINGS.items() if setting.read is not None} <= config_fields


def test_every_setting_stored_read_and_answered_comes_back_as_it_was_set():
    stored = campaign_settings.check(EVERY_SETTING)
    values, calendar, predictive = campaign_settings.overrides(stored, FLOOR)
    config = dataclasses.replace(FLOOR, **values, calendar=calendar, predictive=predictive)
    answered = campaign_settings.effective(config)
    for name, value in EVERY_SETTING.items():
        expected = {"busy": {"delay_seconds": 900, "max_attempts": None}} if name == "outcome_retries" else value
        if name == "open_hours":
            expected = {day: value.get(day, []) for day in answered["open_hours"]}
        if name == "restricted_dates":
            expected = [{"date": "2026-12-25", "to": "2026-12-25", "note": "Christmas"}]
        assert answered[name] == expected, name
    assert config.personal_callback_fallback_minutes is None and config.retry_pattern == (2, 1)


def test_a_setting_a_later_release_stored_is_left_alone():
    """Hosts upgrade one at a time: a release reads settings a later one stored without failing."""
    values, calendar, predictive = campaign_settings.overrides({"max_tries": 3, "recording_disclosure": "east"}, FLOOR)
    assert values == {"max_tries": 3} and calendar is None and predictive is True
