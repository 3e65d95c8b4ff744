ALTER TABLE dialerapi_engine_replies
  MODIFY request_key VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL;
