\set n random(1, 9000000000000000000)
INSERT INTO users (email) VALUES (homed_email('n' || :node || 'c' || :client_id || '-' || :n, :node));
