"""A version that moves, written in one place (setup.cfg's metadata, plumbing.release): `dialerapi
--version`, `/health` and the OpenAPI document's info.version name it, with the schema this
release expects; `/health` says what the database has of it and answers 503 while a migration
this release expects is not applied (docs/operations/health.md; docs/operations/deployment.md
"Upgrading")."""

from click.testing import CliRunner

from conftest import SECRET, make_app, release_version
from dialerapi.cli import main
from dialerapi.plumbing import migrate
from test_migration_dnc import apply_until

AUTH = {"X-API-Key": SECRET}


def migrations():
    """This checkout's migrations in order, by their files' names (yoyo's ids)."""
    return sorted(path.name.removesuffix(".sql") for path in migrate.MIGRATIONS_DIR.glob("*.sql")
                  if not path.name.endswith(".rollback.sql"))


def last_migration():
    return migrations()[-1]


def test_the_command_names_the_release_and_the_schema_it_expects():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"dialerapi {release_version()} (schema {last_migration()})\n"


def test_health_and_the_openapi_document_agree_on_the_version_and_the_schema(client):
    health = client.get("/health", headers=AUTH)
    assert health.status_code == 200, health.get_json()
    body = health.get_json()
    assert body["version"] == release_version()
    assert body["schema"] == {"applied": last_migration(), "expected": last_migration(), "pending": [],
                              "current": True}
    assert client.get("/openapi.json").get_json()["info"]["version"] == release_version()


def test_a_database_without_the_last_migration_is_named_and_unhealthy(fresh_database):
    """A host upgraded before `dialerapi db upgrade` ran: its balancer takes it out."""
    before_last = migrations()[-2]
    apply_until(fresh_database, before_last)
    response = make_app(fresh_database).test_client().get("/health", headers=AUTH)
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unhealthy"
    assert body["schema"] == {"applied": before_last, "expected": last_migration(),
                              "pending": [last_migration()], "current": False}
