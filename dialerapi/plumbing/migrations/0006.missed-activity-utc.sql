-- The exact UTC instants of a missed activity, beside its wall-clock columns (decisions.md D1 keeps
-- those). A wall-clock DATETIME cannot tell the two 01:30s of a fall-back night apart, while the
-- API gives these times in UTC and blocks an agent the moment due_at passes (D7): the service reads
-- these columns, and falls back to the wall-clock ones where they are NULL (rows written before this
-- migration, or by an engine writing SQL directly).
-- depends: 0005.missed-activity-lead-index

ALTER TABLE sales_missed_activities
  ADD COLUMN connected_at_utc DATETIME NULL AFTER connected_at,
  ADD COLUMN ended_at_utc DATETIME NULL AFTER ended_at,
  ADD COLUMN due_at_utc DATETIME NULL AFTER due_at;
