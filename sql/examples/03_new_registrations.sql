-- title: New registrations in the last hour
-- description: Users who signed up in the last 60 minutes, newest first; the lake is about a second behind PostgreSQL.
SELECT id, email, full_name, country, registered_at
FROM lake.public.users
WHERE registered_at > now() - INTERVAL '1 hour'
ORDER BY registered_at DESC;
