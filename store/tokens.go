package store

import (
	"context"
	"net/url"
)

// TokenKey names the OAuth credentials that one user holds with one MCP
// server at one authorization server (its issuer): a client registration
// and a token. A server that moves to another authorization server gets
// credentials of its own there, under another key; the ones held with the
// old issuer are never sent to the new one.
type TokenKey struct {
	// User is the user whose credentials they are (client.WithUser); empty
	// for a host with one user.
	User string
	// Server is the name the server was added under.
	Server string
	// Issuer is the authorization server's issuer identifier. Empty in
	// LoadToken means: the issuer last saved for User and Server.
	Issuer string
}

// String names the key in errors: user/server@issuer, escaped so that the
// parts cannot run into each other.
func (k TokenKey) String() string {
	s := url.PathEscape(k.Server)
	if k.User != "" {
		s = url.PathEscape(k.User) + "/" + s
	}
	if k.Issuer != "" {
		s += "@" + k.Issuer
	}
	return s
}

// TokenRecord is what a TokenStore keeps under a TokenKey: the client's
// document (an oauth.Entry as JSON: tokens, registration, endpoints) and
// the fence of the lease it was written under.
type TokenRecord struct {
	// Data is the document. It holds secrets: a store keeps it as it is
	// and never puts it in an error or a log.
	Data []byte
	// Fence is the fence of the lease (see Leases) the record was written
	// under; 0 for a write under no lease.
	Fence uint64
}

// TokenStore keeps OAuth credentials by user, server and issuer, for every
// replica of a host: one replica's refreshed token is the others' next
// read. Writes are fenced: SaveToken refuses (ErrFenced) a record whose
// Fence is lower than the one stored under the same key, so a replica that
// lost its lease while it was paused cannot overwrite what the new holder
// wrote.
type TokenStore interface {
	// LoadToken returns the record under k; ok is false if there is none.
	// With k.Issuer empty it returns the record of the issuer last saved
	// for k.User and k.Server: the one their credentials are bound to.
	LoadToken(ctx context.Context, k TokenKey) (r TokenRecord, ok bool, err error)
	// SaveToken stores r under k, and binds k.Issuer as the issuer of
	// k.User and k.Server. It fails with ErrFenced, storing nothing, when
	// the record under k was written under a larger fence.
	SaveToken(ctx context.Context, k TokenKey, r TokenRecord) error
	// DeleteTokens forgets every record of user with server, every
	// issuer's, and the binding.
	DeleteTokens(ctx context.Context, user, server string) error
}
