-- title: Latest state of transactions
-- description: One row per transaction as it is now in PostgreSQL: updates applied, deleted transactions gone. The lake merges the change log into this current state for you (merge-on-read); _commit_ts says when each row last changed.
SELECT id, user_id, amount, currency, status, created_at, updated_at, _commit_ts AS changed_at
FROM lake.public.transactions
ORDER BY id DESC
LIMIT 100;
