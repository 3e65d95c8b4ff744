-- name: ping()$
SELECT 1;
