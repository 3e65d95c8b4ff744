-- The state rules switched on and the restrictions (declared emergencies) of
-- rules.compliance.calling_rules (migration 0025). Callers own the transaction.

-- name: calling_rules_enabled()
SELECT name, enabled_at FROM dialerapi_calling_rules ORDER BY name;

-- name: enable_calling_rule(name, now)!
INSERT IGNORE INTO dialerapi_calling_rules (name, enabled_at) VALUES (:name, :now);

-- name: disable_calling_rule(name)!
DELETE FROM dialerapi_calling_rules WHERE name = :name;

-- name: restrictions()
SELECT id, region, starts_at, ends_at, note, created_at FROM dialerapi_restrictions ORDER BY starts_at, id;

-- name: add_restriction(region, starts_at, ends_at, note, created_at)!
INSERT INTO dialerapi_restrictions (region, starts_at, ends_at, note, created_at)
VALUES (:region, :starts_at, :ends_at, :note, :created_at);

-- name: remove_restriction(id)!
DELETE FROM dialerapi_restrictions WHERE id = :id;
