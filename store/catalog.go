package store

import "context"

// Catalogs keep the last good catalog of each upstream server, by the
// server's identity, for every Manager and replica: a user whose fleet is
// built again, or a replica started later, publishes the server's tools
// before it connects. The key names what the server is (the client uses a
// hash of its configuration without per-user values), never a user, and
// the document (the client's JSON) holds no header or environment value.
type Catalogs interface {
	// LoadCatalog returns the document under key; ok is false if there is
	// none.
	LoadCatalog(ctx context.Context, key string) (data []byte, ok bool, err error)
	// SaveCatalog stores data under key.
	SaveCatalog(ctx context.Context, key string, data []byte) error
}
