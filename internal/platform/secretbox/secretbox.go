// Package secretbox seals provider credentials at rest with AES-256-GCM.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// Box seals and opens values with one key.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key given as standard base64.
func New(keyBase64 string) (*Box, error) {
	key, err := base64.StdEncoding.DecodeString(keyBase64)
	if err != nil {
		return nil, fmt.Errorf("secrets.key is not valid base64: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("secrets.key must decode to 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// NewKey returns a fresh random key in the form New expects.
func NewKey() string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(key)
}

// Seal encrypts plaintext. additional binds the ciphertext to its row (for
// example "org/integration/user") so a sealed value cannot be moved to
// another row and still open.
func (b *Box) Seal(plaintext, additional []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return b.aead.Seal(nonce, nonce, plaintext, additional)
}

// ErrOpen is returned when a sealed value cannot be decrypted: a wrong key,
// tampering, or a value moved between rows.
var ErrOpen = errors.New("secretbox: cannot open sealed value")

// Open decrypts a value produced by Seal with the same additional data.
func (b *Box) Open(sealed, additional []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
