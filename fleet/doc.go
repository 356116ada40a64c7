// Package fleet runs one Manager per user, for the hosts that serve many
// people (chat front-ends, agent platforms, gateways): a Pool builds a
// user's fleet on demand from a shared Template, lends it to the host's
// request (Get, then Release), closes the fleets of users who went idle
// (an idle timeout, and a cap on live fleets that closes the least
// recently used first), and shares what is the same for every user.
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
// in the background. A server whose address (its URL but for userinfo
// and query; its command, arguments and directory) depends on the user
// keeps its catalog per user, and so do the servers Config.UserCatalogs
// names.
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
