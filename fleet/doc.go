// Package fleet runs one Manager per user, for the hosts that serve many
// people (chat front-ends, agent platforms, gateways): a Pool builds a
// user's fleet on demand from a shared Template, lends it to the host's
// request (Get, then Release), closes the fleets of users who went idle
// (an idle timeout, and a cap on live fleets that closes the least
// recently used first), and shares what is the same for every user.
//
// The API of this package may still change before v1: a Pool that builds
// a user's fleet from a Template and lends it (Get, Release, Evict, Close)
// and the ${user:NAME} syntax of a template are meant to stay; Config's
// fields, Stats and the Reason values may still be regrouped or renamed.
// Every such change is in CHANGELOG.md.
//
// # Per-user values
//
// A Template is a config file as client.ParseConfig reads it, whose
// strings may also say ${user:NAME}: the pool answers it, each time it
// builds a user's fleet, from the values the host's Config.Values returns
// for that user (${user:id} is the user's id). A value is used as given,
// never expanded again, and never kept by the pool; errors name the
// server, the field and the variable, never a value. Put per-user secrets
// (tokens, keys) in headers, env values or a URL's query, which the
// module never logs or shows; a URL's path and a command's arguments are
// shown in statuses and logs.
//
// A value is fitted to where it stands, by Template.Config, so that no
// user's id or value reaches another user's place. In a URL it is
// percent-encoded (all but letters, digits, "-", ".", "_" and "~"): a
// user id "mallory/../alice" is one path segment, "mallory%2F..%2Falice",
// and a value cannot add a query parameter; "." and ".." are refused in a
// path, and in the host only letters, digits and "-" are allowed. In a
// header value, control characters are refused; in an env value, NUL. In
// every other field (a command, an argument, a directory, an envFile) a
// value must be a name: not empty or ".", and without "/", "\", "..",
// NUL or control characters; an argument may not start with a value
// that starts with "-". A value that does not fit fails the user's Get,
// naming the user, the server, the field and the variable.
//
// # What users share
//
// Every user's Manager is made with client.WithSharedState on one
// store.Shared (Config.Shared; by default a store.Memory of the pool's
// own): OAuth credentials kept by user, server and issuer; the backoff of
// each upstream, so that an outage is backed off by all users together;
// the open task handles, under each user's scope; and the last good
// catalogs, by server identity (client.WithCatalogIdentity): the
// identity of a server is its template entry's (client.ServerConfig.Identity
// with the ${user:…} variables as they are written, never a user's
// value), so a user whose fleet is built again, or a new user, has the
// servers' tools published before any connect, while the connects go on
// in the background. A server whose template entry uses a ${user:…}
// variable anywhere (URL, headers, env, envFile, arguments, ...) or has an
// oauth block keeps its catalog per user (Template.PerUser): what it shows
// may be the user's own (a tool per case, a resource per document), and
// another user must never see it. So do the servers Config.UserCatalogs
// names (one that asks for OAuth without an oauth block in the template,
// since its tokens are per user). Config.SharedCatalogs is the opt-in for
// a server whose entry depends on the user but whose catalog does not.
//
// An idle user whose fleet was closed costs nothing in the pool: what
// outlives the fleet is in the shared store (a token per OAuth server,
// the tasks not collected yet).
//
// The package is in the core module: it needs nothing but the client and
// the store, and a host that runs per-user fleets in one process needs no
// database. Across replicas, give Config.Shared a store of
// github.com/mcpfleet/mcpfleet/store/redis or .../store/postgres.
package fleet
