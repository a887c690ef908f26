-- Seed data for the demo: run once, when the users table is empty. Deterministic (setseed).
SELECT setseed(0.42);

INSERT INTO users (email, full_name, country, profile, registered_at)
SELECT 'user' || g || '@example.com',
       (ARRAY['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken'])[1 + g % 8] || ' ' ||
       (ARRAY['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson'])[1 + (g / 8) % 8],
       (ARRAY['DE', 'FR', 'PL', 'US', 'GB', 'ES', 'IT', 'NL', 'SE', 'BR'])[1 + g % 10],
       jsonb_build_object('plan', (ARRAY['free', 'pro', 'team'])[1 + g % 3], 'newsletter', g % 4 = 0),
       now() - (random() * interval '90 days')
FROM generate_series(1, 1000) g;

INSERT INTO transactions (user_id, amount, currency, status, created_at, updated_at)
SELECT u.id,
       round((random() * 400 + 1)::numeric * CASE WHEN random() < 0.02 THEN 50 ELSE 1 END, 2),
       (ARRAY['EUR', 'USD', 'PLN', 'GBP'])[1 + (random() * 3)::int],
       (ARRAY['completed', 'completed', 'completed', 'pending', 'failed', 'refunded'])[1 + (random() * 5)::int],
       t.at, t.at
FROM generate_series(1, 5000) g
JOIN users u ON u.id = 1 + (g * 7919) % 1000
CROSS JOIN LATERAL (SELECT greatest(u.registered_at, now() - random() * interval '60 days') AS at) t;

INSERT INTO transaction_metadata (transaction_id, channel, ip, device, flagged, reason)
SELECT t.id,
       (ARRAY['web', 'ios', 'android', 'api', 'pos'])[1 + t.id % 5],
       ('10.' || t.id % 256 || '.' || (t.id / 256) % 256 || '.' || 1 + t.id % 250)::inet,
       (ARRAY['Chrome on macOS', 'Safari on iPhone', 'Pixel 8', 'curl/8.5', 'Terminal 7'])[1 + t.id % 5],
       t.amount > 5000 OR random() < 0.01,
       CASE WHEN t.amount > 5000 THEN 'high value' WHEN random() < 0.5 THEN 'suspicious activity' END
FROM transactions t;
UPDATE transaction_metadata SET reason = NULL WHERE NOT flagged;
