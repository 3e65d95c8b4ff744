-- Reference rows every database starts with (decisions.md D1; the spec's Pause reason section).
-- INSERT IGNORE adds what is missing and never overwrites what an operator has changed.

-- name: seed_priorities()!
INSERT IGNORE INTO sales_priorities (id, name, is_callback, is_active) VALUES
  (1, 'Callback Schedule', 1, 1),
  (2, 'Fresh Assign', 0, 1),
  (3, 'Final Disposal', 0, 1);

-- name: seed_dialer_config()!
INSERT IGNORE INTO sales_dialer_config
  (id, isMaintainance, outbound_obey_work_hours, retry_pattern, retry_seconds, max_tries,
   work_start, work_end, disposed_priority_id)
VALUES (1, 0, 0, '4,4,3,2,1,1,1,1,1,1,1', 3600, 20, '09:00:00', '21:00:00', 3);

-- name: seed_pause_reasons()!
INSERT IGNORE INTO sales_pause_reasons (code, label, kind, needs_note, sort_order) VALUES
  ('bio', 'Bio break', 'picker', 0, 1),
  ('tea', 'Tea break', 'picker', 0, 2),
  ('lunch', 'Lunch', 'picker', 0, 3),
  ('meeting', 'Meeting', 'picker', 0, 4),
  ('training', 'Training', 'picker', 0, 5),
  ('backoffice', 'Back-office work', 'picker', 0, 6),
  ('acw', 'After-call work', 'picker', 0, 7),
  ('escalation', 'Escalation', 'picker', 0, 8),
  ('process_query', 'Process query', 'picker', 0, 9),
  ('system', 'System issue', 'picker', 0, 10),
  ('logout', 'Logout', 'picker', 0, 11),
  ('personal', 'Personal', 'picker', 0, 12),
  ('poa', 'POA', 'picker', 0, 13),
  ('ondemand', 'On-demand task', 'picker', 0, 14),
  ('other', 'Other', 'picker', 1, 15),
  ('left', 'Left the panel', 'system', 0, 101),
  ('toggle', 'Outbound toggled', 'system', 0, 102),
  ('day_reset', 'Day reset', 'system', 0, 103);

-- name: seed_contact_caps()!
-- The shipped contact caps (docs/compliance/contact-caps.md), off until an operator
-- enables one; an operator's enabled flag is never overwritten.
INSERT IGNORE INTO dialerapi_contact_caps (name, max_attempts, window_seconds, region, form_type, enabled, preset, source)
VALUES ('florida-oklahoma-3-per-24h', 3, 86400, 'US-FL,US-OK', NULL, 0, 1,
        'Florida s. 501.616(6)(b) as amended in 2021; Oklahoma Telephone Solicitation Act of 2022, 15 O.S. s. 775C.4'),
       ('reg-f-7-in-7', 7, 604800, NULL, NULL, 0, 1,
        'CFPB Regulation F, 12 CFR 1006.14(b)(2)(i): per debt; add a copy with --form-type for each form_type that holds debts');

-- name: seed_cap_consent_days()!
-- Regulation F leaves calls placed within 7 days of the consumer's prior consent out of its count
-- (12 CFR 1006.14(b)(3)(i), (b)(4); migration 0026): the preset's consent_days, as
-- the migration gives it to a preset seeded before it.
UPDATE dialerapi_contact_caps SET consent_days = 7 WHERE name = 'reg-f-7-in-7' AND preset = 1 AND consent_days IS NULL;

-- name: has_cap_consent_days()$
SELECT EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = DATABASE() AND table_name = 'dialerapi_contact_caps' AND column_name = 'consent_days');

-- name: has_contact_caps()$
SELECT EXISTS (SELECT 1 FROM information_schema.tables
               WHERE table_schema = DATABASE() AND table_name = 'dialerapi_contact_caps');
