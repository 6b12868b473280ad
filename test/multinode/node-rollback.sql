\set n random(1, 9000000000000000000)
BEGIN;
INSERT INTO users (email) VALUES (homed_email('rb' || :node || 'c' || :client_id || '-' || :n, :node));
ROLLBACK;
INSERT INTO rolled_back VALUES (homed_email('rb' || :node || 'c' || :client_id || '-' || :n, :node));
