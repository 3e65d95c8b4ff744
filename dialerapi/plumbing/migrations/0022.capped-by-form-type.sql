-- `dialerapi report caps` splits by form_type as its page says: the day's
-- capped numbers were one row per day, cap and number, with the first held lead's form_type, so
-- 16 credit_card and 15 home_loan holds of one number showed as 31 of one form_type.
--
-- dialerapi_contact_capped's primary key gains form_type: one row per day, cap, number and
-- form_type, each counting its own holds. Built in place while writes go on (a small table: one
-- row per number a cap held that day). The previous release's upsert names the same columns and
-- runs unchanged; on this key it counts per form_type too. Rolled back, the rows of a number are
-- summed back into one.
-- depends: 0021.agent-claims

ALTER TABLE dialerapi_contact_capped DROP PRIMARY KEY, ADD PRIMARY KEY (day, cap, phone_e164, form_type),
  ALGORITHM=INPLACE, LOCK=NONE;
