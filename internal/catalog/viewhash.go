package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
)

// setSum is a sum of digests modulo 2^256. Addition does not depend on
// order, and subtracting a digest undoes adding it, so the View hash can be
// kept current by each change at the cost of that change, rather than
// recomputed over every server.
type setSum [4]uint64

func (s *setSum) add(d digest) {
	var carry uint64
	for i := range s {
		s[i], carry = bits.Add64(s[i], binary.BigEndian.Uint64(d[i*8:]), carry)
	}
}

func (s *setSum) sub(d digest) {
	var borrow uint64
	for i := range s {
		s[i], borrow = bits.Sub64(s[i], binary.BigEndian.Uint64(d[i*8:]), borrow)
	}
}

// viewHash is the View hash over the separator, the sum of the published
// servers' digests (see serverDigest) and the sum of the quarantined names'
// digests (see queueDigest).
func viewHash(separator string, servers, quarantined setSum) string {
	buf := appendStr(make([]byte, 0, 8+len(separator)+2*32), separator)
	for _, s := range [...]*setSum{&servers, &quarantined} {
		for _, w := range s {
			buf = binary.BigEndian.AppendUint64(buf, w)
		}
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// serverDigest is what a server contributes to the View hash: its name,
// tool prefix, catalog Hash and server info. Given those, its tools and
// their names follow, so hashing them one by one would add cost and no
// information.
func serverDigest(server, prefix string, c *Catalog) digest {
	buf := make([]byte, 0, 3*8+len(server)+len(prefix)+len(c.Hash)+len(c.seal.meta))
	buf = appendStr(buf, server)
	buf = appendStr(buf, prefix)
	buf = appendStr(buf, c.Hash)
	buf = append(buf, c.seal.meta[:]...)
	return sha256.Sum256(buf)
}

// queueDigest is what a qualified name with quarantined tools contributes
// to the View hash: the name and its queue, server and wire name of each
// quarantined tool in promotion order.
func queueDigest(qualified string, queue []Quarantine) digest {
	buf := appendStr(nil, qualified)
	for _, q := range queue {
		buf = appendStr(buf, q.Server)
		buf = appendStr(buf, q.Tool)
	}
	return sha256.Sum256(buf)
}

// appendStr appends s length-prefixed, so that concatenations cannot alias.
func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}
