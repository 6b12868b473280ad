-- Statistics on the expressions the coordinator groups by. With use_remote_estimate the
-- coordinator costs a pushed-down aggregate with the node's own estimate; without these the node
-- estimates one group per row and the coordinator prefers to fetch the rows and aggregate them
-- itself.
CREATE STATISTICS users_home ON (bloom_shard(email, 3)) FROM users;
CREATE STATISTICS users_shard ON (bloom_shard(email, 64)) FROM users;
ANALYZE users;
