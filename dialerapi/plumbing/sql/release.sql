-- The migrations a database has (yoyo's own table; plumbing.release).

-- name: applied_migrations()
SELECT migration_id FROM _yoyo_migration;
