-- When may this person be called: where the customer is, their consent, the state
-- rules switched on, and restrictions (declared emergencies, one-off bans).
--
-- sales_master.region, postal_code: the CRM's place of the customer (ISO 3166-2 `US-LA`, a ZIP
--   code), pushed with the lead; when given they win over the number's area code (rules.compliance.places).
-- sales_master.consent_type (written | express | ebr), consent_at (naive UTC), consent_source: the
--   customer's consent as the CRM recorded it (rules.compliance.calling_rules).
-- dialerapi_calling_rules: the names of the rows of the shipped table (rules.compliance.state_table) that are
--   on; a row is off until `dialerapi rules enable NAME`.
-- dialerapi_restrictions: bans of calls to a region from starts_at to ends_at (naive UTC).
--
-- The lead's calling profile is its call zone (dialerapi_call_zones, 0012), whose names now carry
-- its regions and consent type as well as its IANA zones: no column of the claim's indexes changes.
-- A lead written before this migration keeps its call zone until a claim or a push works it out
-- again (compliance.refusal corrects a profile that disagrees with the lead).
-- INVISIBLE, added in place: the CRM's and the engine's SELECT * and column-less INSERT see the
-- table as before. Expand only: the previous release names none of them.
-- depends: 0024.claim-gates

ALTER TABLE sales_master
  ADD COLUMN region VARCHAR(6) CHARACTER SET ascii NULL INVISIBLE,
  ADD COLUMN postal_code VARCHAR(10) CHARACTER SET ascii NULL INVISIBLE,
  ADD COLUMN consent_type VARCHAR(8) CHARACTER SET ascii NULL INVISIBLE,
  ADD COLUMN consent_at DATETIME NULL INVISIBLE,
  ADD COLUMN consent_source VARCHAR(255) NULL INVISIBLE,
  ALGORITHM=INSTANT;

CREATE TABLE dialerapi_calling_rules (
  name VARCHAR(64) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  enabled_at DATETIME NOT NULL
) ENGINE=InnoDB;

CREATE TABLE dialerapi_restrictions (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  region VARCHAR(6) CHARACTER SET ascii NOT NULL,
  starts_at DATETIME NOT NULL,
  ends_at DATETIME NOT NULL,
  note VARCHAR(255) NOT NULL,
  created_at DATETIME NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
