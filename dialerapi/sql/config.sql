-- name: get_dialer_config()^
SELECT isMaintainance, outbound_obey_work_hours, retry_pattern, retry_seconds, max_tries,
       work_start, work_end, disposed_priority_id
FROM sales_dialer_config
WHERE id = 1;

-- name: get_push_priorities()
-- Every priority with what a push needs to know of it: may a CRM use it, does it take a callback time.
SELECT p.id, p.is_callback, p.is_active, (p.id = c.disposed_priority_id) AS is_disposed
FROM sales_priorities AS p
CROSS JOIN sales_dialer_config AS c
WHERE c.id = 1;
