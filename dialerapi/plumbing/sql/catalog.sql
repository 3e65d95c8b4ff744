-- name: list_pause_reasons()
SELECT code, label, kind, needs_note
FROM sales_pause_reasons
ORDER BY sort_order, code;
