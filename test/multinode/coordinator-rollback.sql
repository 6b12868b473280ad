\set n random(1, 9000000000000000000)
BEGIN;
CALL sign_up('rbco' || :client_id || '-' || :n || '@mail.com');
ROLLBACK;
INSERT INTO rolled_back VALUES ('rbco' || :client_id || '-' || :n || '@mail.com');
