-- title: Total amount per user
-- description: Completed and pending spend per user and currency, from the lake's current state.
SELECT user_id,
       currency,
       count(*)    AS transactions,
       sum(amount) AS total_amount
FROM lake.public.transactions
WHERE status IN ('completed', 'pending')
GROUP BY user_id, currency
ORDER BY total_amount DESC, user_id
LIMIT 100;
