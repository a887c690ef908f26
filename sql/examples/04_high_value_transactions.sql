-- title: High-value transactions
-- description: Transactions of 1,000 or more (any currency), largest first. Amounts are exact numeric(12,2).
SELECT id, user_id, amount, currency, status, created_at
FROM lake.public.transactions
WHERE amount >= 1000
ORDER BY amount DESC, id
LIMIT 100;
