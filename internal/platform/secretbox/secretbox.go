package secretbox

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
)

// DefaultKeyID is the id of secrets.key, the single key of a configuration
// without secrets.keys: what it seals carries this id.
const DefaultKeyID = "default"

// version is the first byte of a value sealed with a key id.
const version = 0x01

// Key is one key of a keyring.
type Key struct {
	// ID names the key in what it seals: 1 to 32 letters, digits, '.', '_'
	// or '-', unique in the ring.
	ID string
	// Secret is the key: standard base64 of 32 random bytes.
	Secret string
}

// Box seals with the primary key of its ring and opens with any of them.
type Box struct {
	keys []ringKey // keys[0] is the primary
}

type ringKey struct {
	id   string
	aead cipher.AEAD
	// mac is the key's subkey for MAC, derived from it: never the key.
	mac []byte
}

// New returns a Box whose ring is the one key keyBase64 (standard base64
// of 32 bytes) with id DefaultKeyID.
func New(keyBase64 string) (*Box, error) {
	return NewRing([]Key{{ID: DefaultKeyID, Secret: keyBase64}})
}

var validID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)

// NewRing returns a Box that seals with keys[0] and opens with any of keys.
// It refuses an empty ring, an invalid or repeated id, a key that is not
// base64 of 32 bytes, and one key listed twice. Its errors name keys by id
// (secrets.keys) or as secrets.key, never by their value.
func NewRing(keys []Key) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("secrets.key or secrets.keys is required: base64 of 32 random bytes (`openssl rand -base64 32` makes one)")
	}
	name := func(k Key) string {
		if len(keys) == 1 && k.ID == DefaultKeyID {
			return "secrets.key"
		}
		return fmt.Sprintf("secrets.keys %q", k.ID)
	}
	box := &Box{}
	seen := map[string]string{}
	for i, k := range keys {
		if !validID.MatchString(k.ID) {
			return nil, fmt.Errorf("secrets.keys[%d]: id %q must be 1 to 32 letters, digits, '.', '_' or '-'", i, k.ID)
		}
		raw, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s is not valid base64: %w", name(k), err)
		}
		if len(raw) != 32 {
			return nil, fmt.Errorf("%s must decode to 32 bytes, got %d", name(k), len(raw))
		}
		for _, prev := range box.keys {
			if prev.id == k.ID {
				return nil, fmt.Errorf("secrets.keys: id %q is listed twice", k.ID)
			}
		}
		if prev, ok := seen[string(raw)]; ok {
			return nil, fmt.Errorf("secrets.keys %q and %q are the same key", prev, k.ID)
		}
		seen[string(raw)] = k.ID
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		box.keys = append(box.keys, ringKey{id: k.ID, aead: aead, mac: derive(raw, "outboxd/secretbox/mac")})
	}
	return box, nil
}

// NewKey returns a fresh random key in the form New expects.
func NewKey() string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(key)
}

// Primary is the id of the key Seal seals with.
func (b *Box) Primary() string { return b.keys[0].id }

// IDs are the ids of the ring's keys, the primary first.
func (b *Box) IDs() []string {
	ids := make([]string, len(b.keys))
	for i, k := range b.keys {
		ids[i] = k.id
	}
	return ids
}

// Seal encrypts plaintext with the primary key. additional binds the
// ciphertext to its row (for example "org/integration/user") so a sealed
// value cannot be moved to another row and still open.
func (b *Box) Seal(plaintext, additional []byte) []byte {
	k := b.keys[0]
	header := append([]byte{version, byte(len(k.id))}, k.id...)
	n := k.aead.NonceSize()
	out := make([]byte, len(header)+n, len(header)+n+len(plaintext)+k.aead.Overhead())
	copy(out, header)
	if _, err := rand.Read(out[len(header):]); err != nil {
		panic(err)
	}
	return k.aead.Seal(out, out[len(header):], plaintext, withHeader(header, additional))
}

// ErrOpen is returned when a sealed value cannot be decrypted: a key not
// in the ring, tampering, or a value moved between rows.
var ErrOpen = errors.New("secretbox: cannot open sealed value")

// Open decrypts a value produced by Seal, with any key of the ring, and the
// same additional data.
func (b *Box) Open(sealed, additional []byte) ([]byte, error) {
	plain, _, err := b.OpenKey(sealed, additional)
	return plain, err
}

// Opened says how a value opened.
type Opened struct {
	// KeyID is the id of the ring's key that opened it.
	KeyID string
	// Current is true when it was sealed as Seal seals now: with the
	// primary key, under its id. Anything else is what a rotation
	// re-seals.
	Current bool
}

// OpenKey is Open that also says which key opened the value.
func (b *Box) OpenKey(sealed, additional []byte) ([]byte, Opened, error) {
	header, body, tagged := parse(sealed)
	if tagged {
		// The key the value names first, then (ids renamed in the
		// configuration) the others.
		for _, k := range b.keys {
			if k.id == string(header[2:]) {
				if plain, ok := open(k, header, body, additional); ok {
					return plain, Opened{KeyID: k.id, Current: k.id == b.keys[0].id}, nil
				}
			}
		}
	}
	for _, k := range b.keys {
		if plain, ok := open(k, nil, sealed, additional); ok {
			return plain, Opened{KeyID: k.id}, nil
		}
	}
	if tagged {
		for _, k := range b.keys {
			if k.id == string(header[2:]) {
				continue
			}
			if plain, ok := open(k, header, body, additional); ok {
				return plain, Opened{KeyID: k.id}, nil
			}
		}
	}
	return nil, Opened{}, ErrOpen
}

// SealedWith returns the key id a sealed value names, and false for a value
// sealed before keyrings (which names none). It does not check that the
// value opens.
func SealedWith(sealed []byte) (string, bool) {
	header, _, tagged := parse(sealed)
	if !tagged {
		return "", false
	}
	return string(header[2:]), true
}

// parse splits a value into its header (version, id length, id) and the
// rest, when it has the form of one sealed with a key id. A value sealed
// before keyrings starts with a random nonce and may have that form by
// chance; only opening tells them apart.
func parse(sealed []byte) (header, body []byte, ok bool) {
	if len(sealed) < 2 || sealed[0] != version {
		return nil, nil, false
	}
	end := 2 + int(sealed[1])
	if sealed[1] == 0 || len(sealed) < end || !validID.Match(sealed[2:end]) {
		return nil, nil, false
	}
	return sealed[:end], sealed[end:], true
}

// open opens body (nonce, ciphertext and tag) with k, authenticating header
// with additional.
func open(k ringKey, header, body, additional []byte) ([]byte, bool) {
	n := k.aead.NonceSize()
	if len(body) < n+k.aead.Overhead() {
		return nil, false
	}
	plain, err := k.aead.Open(nil, body[:n], body[n:], withHeader(header, additional))
	return plain, err == nil
}

// withHeader is the additional data a value with header is sealed with:
// the header, then the caller's.
func withHeader(header, additional []byte) []byte {
	if header == nil {
		return additional
	}
	return bytes.Join([][]byte{header, additional}, nil)
}

// derive returns the subkey of key for purpose: HMAC-SHA256(key, purpose).
func derive(key []byte, purpose string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(purpose))
	return h.Sum(nil)
}

// MACKey is the id of the key MAC fingerprints with: the primary key's.
func (b *Box) MACKey() string { return b.keys[0].id }

// MAC returns a keyed fingerprint of data for label, hex: HMAC-SHA256
// under a subkey, derived for label, of the key with id (MACKey for new
// fingerprints; a fingerprint made earlier is made again with the key it
// was made with, while the ring lists it). It identifies a value (a
// credential, exact params) without revealing it, and without a way to
// test guesses offline. ok is false when the ring has no key id.
func (b *Box) MAC(id, label string, data []byte) (string, bool) {
	for _, k := range b.keys {
		if k.id == id {
			h := hmac.New(sha256.New, derive(k.mac, label))
			h.Write(data)
			return hex.EncodeToString(h.Sum(nil)), true
		}
	}
	return "", false
}
