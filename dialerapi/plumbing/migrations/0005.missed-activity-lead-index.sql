-- Settle ends a lead's open missed activities by lead_id; without an index that UPDATE scanned and
-- locked the whole table, deadlocking with CRM actions clearing activities by oli_id.
-- depends: 0004.claim

ALTER TABLE sales_missed_activities ADD KEY ix_sales_missed_activities_lead (lead_id, ended_at);
