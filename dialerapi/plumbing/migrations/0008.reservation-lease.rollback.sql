ALTER TABLE sales_master DROP COLUMN reservation_id, DROP COLUMN reserved_at;
