// Package redistest runs, for tests, a real redis-server (Debian's
// redis-server package) on a free port of 127.0.0.1, in a temporary
// directory, with nothing persisted; it is stopped when the test ends. No
// mock stands in for Redis: what a test sees is what a host's Redis does.
//
// When redis-server is missing the test fails under CI (CI is set) and is
// skipped elsewhere, saying how to install it (make test does it, through
// .ci/services).
//
// It runs on Linux, where the tests of the shared stores run; elsewhere
// Start skips the test.
package redistest
