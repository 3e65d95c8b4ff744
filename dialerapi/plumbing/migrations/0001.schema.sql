-- The tables the dialing engine shares (decisions.md D1). Names and the columns named in D1 are a
-- contract with the engine, reports and operators: add, never rename.
-- depends:

CREATE TABLE sales_priorities (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  is_callback TINYINT(1) NOT NULL DEFAULT 0,
  is_active TINYINT(1) NOT NULL DEFAULT 1
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_dialer_config (
  id INT NOT NULL PRIMARY KEY,
  isMaintainance TINYINT(1) NOT NULL DEFAULT 0,
  outbound_obey_work_hours TINYINT(1) NOT NULL DEFAULT 0,
  retry_pattern VARCHAR(255) NOT NULL DEFAULT '4,4,3,2,1,1,1,1,1,1,1',
  retry_seconds INT NOT NULL DEFAULT 3600,
  max_tries INT NOT NULL DEFAULT 20,
  work_start TIME NOT NULL DEFAULT '09:00:00',
  work_end TIME NOT NULL DEFAULT '21:00:00',
  disposed_priority_id INT NOT NULL DEFAULT 3,
  CONSTRAINT ck_sales_dialer_config_single_row CHECK (id = 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- oli_id is compared byte for byte (utf8mb4_bin): 'ABC-1' and 'abc-1' are two leads, and the
-- index order matches the order in which a batch locks its rows.
CREATE TABLE sales_master (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  oli_id VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  data_id CHAR(36) CHARACTER SET ascii NOT NULL,
  phone_number VARCHAR(15) CHARACTER SET ascii NOT NULL,
  client_name VARCHAR(150) NOT NULL,
  form_type VARCHAR(64) NOT NULL,
  priority_id INT NOT NULL,
  dial_status VARCHAR(20) NOT NULL DEFAULT 'Pending',
  disposeRemark VARCHAR(255) NULL,
  last_dial_result VARCHAR(32) NULL,
  hangup_by VARCHAR(32) NULL,
  hangup_cause VARCHAR(64) NULL,
  last_attempt_at DATETIME NULL,
  first_attempt_at DATETIME NULL,
  next_retry_at DATETIME NULL,
  callback_scheduled_at DATETIME NULL,
  call_count INT NOT NULL DEFAULT 0,
  isReserved TINYINT(1) NOT NULL DEFAULT 0,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL,
  UNIQUE KEY uq_sales_master_oli_id (oli_id),
  KEY ix_sales_master_status (dial_status, isReserved)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_pending_actions (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  oli_id VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  action VARCHAR(16) NOT NULL,
  scheduled_at DATETIME NULL,
  reason VARCHAR(200) NULL,
  status VARCHAR(16) NOT NULL DEFAULT 'pending',
  agentId BIGINT NULL,
  extension VARCHAR(16) NULL,
  callbackType VARCHAR(16) NULL,
  workStatus VARCHAR(100) NULL,
  subDisposition VARCHAR(100) NULL,
  remarks VARCHAR(500) NULL,
  created_at DATETIME NOT NULL,
  applied_at DATETIME NULL,
  KEY ix_sales_pending_actions_oli (oli_id, status),
  KEY ix_sales_pending_actions_status (status, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_call_attempts (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  lead_id BIGINT NOT NULL,
  oli_id VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  agent_id BIGINT NULL,
  call_type VARCHAR(16) NOT NULL,
  started_at DATETIME NULL,
  ended_at DATETIME NULL,
  result VARCHAR(32) NULL,
  hangup_by VARCHAR(32) NULL,
  hangup_cause VARCHAR(64) NULL,
  KEY ix_sales_call_attempts_lead (lead_id),
  KEY ix_sales_call_attempts_oli (oli_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_agents (
  id BIGINT NOT NULL PRIMARY KEY,
  extension VARCHAR(16) NOT NULL,
  name VARCHAR(150) NOT NULL,
  outbound_blocked TINYINT(1) NOT NULL DEFAULT 0,
  pause_code VARCHAR(32) NULL,
  reason_note VARCHAR(80) NULL,
  UNIQUE KEY uq_sales_agents_extension (extension)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_agent_skills (
  agent_id BIGINT NOT NULL,
  form_type VARCHAR(64) NOT NULL,
  PRIMARY KEY (agent_id, form_type)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_agent_priorities (
  agent_id BIGINT NOT NULL,
  priority_id INT NOT NULL,
  PRIMARY KEY (agent_id, priority_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_missed_activities (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  agent_id BIGINT NOT NULL,
  lead_id BIGINT NOT NULL,
  oli_id VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  call_type VARCHAR(16) NOT NULL,
  extension VARCHAR(16) NULL,
  connected_at DATETIME NOT NULL,
  ended_at DATETIME NULL,
  due_at DATETIME NULL,
  cleared_at DATETIME NULL,
  cleared_by VARCHAR(16) NULL,
  KEY ix_sales_missed_activities_agent (agent_id, cleared_at, connected_at),
  KEY ix_sales_missed_activities_oli (oli_id, cleared_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sales_pause_reasons (
  code VARCHAR(32) NOT NULL PRIMARY KEY,
  label VARCHAR(100) NOT NULL,
  kind VARCHAR(8) NOT NULL,
  needs_note TINYINT(1) NOT NULL DEFAULT 0,
  sort_order INT NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
