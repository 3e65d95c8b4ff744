-- Retries per outcome (rules.leads.outcome_retries; docs/compliance/contact-caps.md).
-- Callers own the transaction.

-- name: outcome_retries()
SELECT outcome, delay_seconds, max_attempts FROM dialerapi_outcome_retries ORDER BY outcome;

-- name: set_outcome_retry(outcome, delay_seconds, max_attempts)!
-- A NULL part keeps the stored one.
INSERT INTO dialerapi_outcome_retries (outcome, delay_seconds, max_attempts)
VALUES (:outcome, :delay_seconds, :max_attempts)
ON DUPLICATE KEY UPDATE delay_seconds = COALESCE(VALUES(delay_seconds), delay_seconds),
  max_attempts = COALESCE(VALUES(max_attempts), max_attempts);

-- name: reset_outcome_retry(outcome)!
DELETE FROM dialerapi_outcome_retries WHERE outcome = :outcome;
