\set n random(1, 9000000000000000000)
CALL sign_up('co' || :client_id || '-' || :n || '@mail.com');
