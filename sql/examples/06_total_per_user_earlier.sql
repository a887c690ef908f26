-- title: Total amount per user, as of 5 minutes ago
-- description: The same question as "Total amount per user", answered from the lake as it was 5 minutes ago (Iceberg time travel: FOR TIMESTAMP AS OF <time>, or FOR VERSION AS OF <change-log snapshot id> from GET /v1/schema).
SELECT user_id,
       currency,
       count(*)    AS transactions,
       sum(amount) AS total_amount
FROM lake.public.transactions FOR TIMESTAMP AS OF now() - INTERVAL '5 minutes'
WHERE status IN ('completed', 'pending')
GROUP BY user_id, currency
ORDER BY total_amount DESC, user_id
LIMIT 100;
