-- title: Flagged transactions with live user details
-- description: A federated join: flagged metadata and transactions from the lake, joined with the users table read live from PostgreSQL (source pg) for their current email and country.
SELECT m.transaction_id,
       m.reason,
       m.channel,
       t.amount,
       t.currency,
       t.status,
       u.email,
       u.country
FROM lake.public.transaction_metadata AS m
JOIN lake.public.transactions AS t ON t.id = m.transaction_id
JOIN pg.public.users AS u ON u.id = t.user_id
WHERE m.flagged
ORDER BY m.transaction_id DESC
LIMIT 100;
