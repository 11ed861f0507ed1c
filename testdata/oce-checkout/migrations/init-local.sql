-- Fixture of OCE's migrations/init-local.sql (see README.md): the local-only login
-- roles of the Compose profile. The database stand-in reads the CREATE ROLE lines.
CREATE ROLE occ_migrator WITH LOGIN PASSWORD 'occ-migrator-local' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
CREATE ROLE occ_app WITH LOGIN PASSWORD 'occ-app-local' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;

-- The migrator creates the schemas (Drizzle issues CREATE SCHEMA IF NOT EXISTS).
GRANT CREATE ON DATABASE openclaw_enterprise TO occ_migrator;
CREATE SCHEMA occ AUTHORIZATION occ_migrator;
CREATE SCHEMA drizzle AUTHORIZATION occ_migrator;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
