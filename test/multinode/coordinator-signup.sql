\set n random(1, 1000000000000)
CALL sign_up('co' || :client_id || '-' || :n || '@mail.com');
