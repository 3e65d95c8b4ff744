"""CHANGELOG.md names every migration and every setting an operator can set
(docs/operations/deployment.md "Upgrading"): an upgrade's reader learns from it what the release
applies to the schema and what it lets them tune, so a migration or a setting the changelog does
not name fails here."""

import re
from pathlib import Path

import pytest

from dialerapi.cli.config import FloorSettingsSchema
from dialerapi.plumbing import config
from dialerapi.plumbing import migrate, release
from dialerapi.rules.config import campaign_settings

CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"


def changelog_words():
    return set(re.findall(r"[A-Za-z0-9_.-]+", CHANGELOG.read_text()))


def migration_ids():
    return sorted(path.name.removesuffix(".sql") for path in migrate.MIGRATIONS_DIR.glob("*.sql")
                  if not path.name.endswith(".rollback.sql"))


def setting_names():
    return sorted({*config.SETTINGS, *FloorSettingsSchema().fields, *campaign_settings.SETTINGS})


@pytest.mark.parametrize("migration", migration_ids())
def test_the_changelog_names_each_migration(migration):
    """By its number as the release's notes spell it ("Migration 0027"), or by its whole id."""
    number = migration.split(".")[0]
    text = CHANGELOG.read_text()
    assert migration in changelog_words() or re.search(rf"\b[Mm]igrations? (?:[0-9]{{4}}[, and]+)*{number}\b", text)


@pytest.mark.parametrize("setting", setting_names())
def test_the_changelog_names_each_setting(setting):
    assert f"`{setting}`" in CHANGELOG.read_text()


def test_the_newest_release_in_the_changelog_is_the_one_installed():
    """The version `dialerapi --version`, `/health` and the OpenAPI document give (the package's
    metadata, plumbing.release) is the changelog's newest release, under its Unreleased section."""
    releases = re.findall(r"^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}$", CHANGELOG.read_text(), re.M)
    assert releases and releases[0] == release.VERSION
    assert CHANGELOG.read_text().index("## Unreleased") < CHANGELOG.read_text().index(f"## {releases[0]} - ")
