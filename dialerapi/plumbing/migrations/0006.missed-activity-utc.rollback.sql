ALTER TABLE sales_missed_activities DROP COLUMN connected_at_utc, DROP COLUMN ended_at_utc, DROP COLUMN due_at_utc;
