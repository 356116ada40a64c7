package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"golang.org/x/oauth2/jws"
)

// clientAssertionType is the client_assertion_type of private_key_jwt
// (RFC 7523 section 2.2).
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// signer signs JWS payloads with a client's private key.
type signer struct {
	alg  string
	sign jws.Signer
}

// parseSigner reads a PEM private key (PKCS#8, or SEC 1 / PKCS#1) and
// returns a signer for alg, or the algorithm the key implies when alg is
// empty. x/oauth2's jws signs RS256 only; ES256 is signed here with
// crypto/ecdsa in JWS's raw r||s form (RFC 7518 section 3.4).
func parseSigner(pemKey, alg string) (*signer, error) {
	block, _ := pem.Decode([]byte(pemKey))
	if block == nil {
		return nil, errors.New("not a PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		// x509's errors describe the encoding, never the key's bytes.
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if alg == "" {
			alg = "ES256"
		}
		if alg != "ES256" || k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("an EC key signs ES256 on P-256 only, not %s", alg)
		}
		return &signer{alg: alg, sign: func(data []byte) ([]byte, error) {
			sum := sha256.Sum256(data)
			r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
			if err != nil {
				return nil, err
			}
			out := make([]byte, 64)
			r.FillBytes(out[:32])
			s.FillBytes(out[32:])
			return out, nil
		}}, nil
	case *rsa.PrivateKey:
		if alg == "" {
			alg = "RS256"
		}
		if alg != "RS256" {
			return nil, fmt.Errorf("an RSA key signs RS256 only, not %s", alg)
		}
		return &signer{alg: alg, sign: func(data []byte) ([]byte, error) {
			sum := sha256.Sum256(data)
			return rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		}}, nil
	}
	return nil, fmt.Errorf("unsupported key type %T (want EC P-256 or RSA)", key)
}

// assertion returns a client assertion for private_key_jwt: iss and sub are
// the client id, aud the authorization server's issuer, valid for five
// minutes, with a fresh jti so that it cannot be replayed.
func (s *signer) assertion(clientID, audience string, now time.Time) (string, error) {
	jti, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return "", err
	}
	return jws.EncodeWithSigner(&jws.Header{Algorithm: s.alg, Typ: "JWT"}, &jws.ClaimSet{
		Iss:           clientID,
		Sub:           clientID,
		Aud:           audience,
		Iat:           now.Add(-10 * time.Second).Unix(),
		Exp:           now.Add(5 * time.Minute).Unix(),
		PrivateClaims: map[string]any{"jti": jti.Text(36)},
	}, s.sign)
}
