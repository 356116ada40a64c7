// Package pgtest runs, for tests, a real PostgreSQL 15 server (Debian's
// postgresql-15, /usr/lib/postgresql/15/bin) on a free port of 127.0.0.1,
// in a temporary directory, stopped when the test ends. initdb and postgres
// refuse to run as root, so a test running as root runs them as the
// unprivileged user MCPFLEET_TEST_USER (default mcpfleet-test, made by
// .ci/services). No mock stands in for PostgreSQL.
//
// When PostgreSQL or the user is missing, the test fails under CI (CI is
// set) and is skipped elsewhere, saying how to install it. It runs on
// Linux, where the tests of the shared stores run; elsewhere Start skips.
package pgtest
