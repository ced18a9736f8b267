// Package secretbox seals provider credentials and the other secrets outboxd
// stores at rest with AES-256-GCM, under a keyring: several keys, each with
// an id, the first of which (the primary) seals and every one of which
// opens. What it seals names the key that sealed it, so a key can be
// rotated while processes run: list the new key, re-seal the stored values
// with it (`outboxd secrets rotate`), then drop the old one.
//
// A sealed value is
//
//	0x01 | len(id) | id | nonce (12 bytes) | ciphertext and tag
//
// and its header (version, id) is authenticated with the caller's
// additional data. Values sealed before keyrings (nonce | ciphertext and
// tag, no header) still open with any key of the ring: they are what the
// single secrets.key sealed, and that key is one of the ring while they
// remain.
package secretbox
