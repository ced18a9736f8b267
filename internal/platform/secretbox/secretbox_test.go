package secretbox

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBox(t *testing.T) {
	t.Parallel()
	box, err := New(NewKey())
	require.NoError(t, err)
	sealed := box.Seal([]byte("xoxb-secret"), []byte("org/slack"))
	require.False(t, bytes.Contains(sealed, []byte("xoxb-secret")))

	plain, err := box.Open(sealed, []byte("org/slack"))
	require.NoError(t, err)
	require.Equal(t, "xoxb-secret", string(plain))

	_, err = box.Open(sealed, []byte("other-org/slack"))
	require.ErrorIs(t, err, ErrOpen, "a sealed value moved to another row does not open")

	other, err := New(NewKey())
	require.NoError(t, err)
	_, err = other.Open(sealed, []byte("org/slack"))
	require.ErrorIs(t, err, ErrOpen)

	sealed[len(sealed)-1] ^= 1
	_, err = box.Open(sealed, []byte("org/slack"))
	require.ErrorIs(t, err, ErrOpen)
}

// sealLegacy seals as secretbox did before keyrings: nonce, then
// ciphertext and tag, no key id.
func sealLegacy(t *testing.T, keyBase64 string, plaintext, additional []byte, noncePrefix ...byte) []byte {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(keyBase64)
	require.NoError(t, err)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(t, err)
	nonce := make([]byte, aead.NonceSize())
	_, err = rand.Read(nonce)
	require.NoError(t, err)
	copy(nonce, noncePrefix)
	return aead.Seal(nonce, nonce, plaintext, additional)
}

func TestRing_SealsWithThePrimaryAndNamesIt(t *testing.T) {
	t.Parallel()
	k1, k2 := NewKey(), NewKey()
	ring, err := NewRing([]Key{{ID: "2026-11", Secret: k2}, {ID: "default", Secret: k1}})
	require.NoError(t, err)
	require.Equal(t, "2026-11", ring.Primary())
	require.Equal(t, []string{"2026-11", "default"}, ring.IDs())

	sealed := ring.Seal([]byte("s3cret"), []byte("row"))
	id, tagged := SealedWith(sealed)
	require.True(t, tagged)
	require.Equal(t, "2026-11", id)
	require.Equal(t, append([]byte{version, 7}, "2026-11"...), sealed[:9], "version, id length, id")

	plain, how, err := ring.OpenKey(sealed, []byte("row"))
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(plain))
	require.Equal(t, Opened{KeyID: "2026-11", Current: true}, how)

	// Only the new key opens it: a process that knows only the old key
	// cannot.
	old, err := New(k1)
	require.NoError(t, err)
	_, err = old.Open(sealed, []byte("row"))
	require.ErrorIs(t, err, ErrOpen)
	alone, err := NewRing([]Key{{ID: "2026-11", Secret: k2}})
	require.NoError(t, err)
	plain, err = alone.Open(sealed, []byte("row"))
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(plain))
}

func TestRing_OpensWhatOtherKeysSealed(t *testing.T) {
	t.Parallel()
	k1, k2 := NewKey(), NewKey()
	ring, err := NewRing([]Key{{ID: "new", Secret: k2}, {ID: "default", Secret: k1}})
	require.NoError(t, err)

	t.Run("BeforeKeyrings", func(t *testing.T) {
		t.Parallel()
		legacy := sealLegacy(t, k1, []byte("from last year"), []byte("row"))
		plain, how, err := ring.OpenKey(legacy, []byte("row"))
		require.NoError(t, err)
		require.Equal(t, "from last year", string(plain))
		require.Equal(t, Opened{KeyID: "default", Current: false}, how)

		// The single secrets.key of today opens it after the upgrade.
		single, err := New(k1)
		require.NoError(t, err)
		plain, how, err = single.OpenKey(legacy, []byte("row"))
		require.NoError(t, err)
		require.Equal(t, "from last year", string(plain))
		require.False(t, how.Current, "a value without a key id is re-sealed by a rotation")

		_, err = ring.Open(legacy, []byte("another row"))
		require.ErrorIs(t, err, ErrOpen)
	})

	t.Run("BeforeKeyringsLookingLikeAKeyID", func(t *testing.T) {
		t.Parallel()
		// A random nonce that happens to read as a header naming a key of
		// the ring, or one that is not: the value still opens.
		for _, prefix := range [][]byte{{version, 3, 'n', 'e', 'w'}, {version, 7, 'd', 'e', 'f', 'a', 'u', 'l', 't'}, {version, 2, 'z', 'z'}} {
			legacy := sealLegacy(t, k1, []byte("lucky nonce"), []byte("row"), prefix...)
			_, tagged := SealedWith(legacy)
			require.True(t, tagged)
			plain, how, err := ring.OpenKey(legacy, []byte("row"))
			require.NoError(t, err)
			require.Equal(t, "lucky nonce", string(plain))
			require.Equal(t, Opened{KeyID: "default"}, how)
		}
	})

	t.Run("ByAnOlderKey", func(t *testing.T) {
		t.Parallel()
		single, err := New(k1)
		require.NoError(t, err)
		sealed := single.Seal([]byte("sealed before the rotation"), []byte("row"))
		id, _ := SealedWith(sealed)
		require.Equal(t, DefaultKeyID, id)
		plain, how, err := ring.OpenKey(sealed, []byte("row"))
		require.NoError(t, err)
		require.Equal(t, "sealed before the rotation", string(plain))
		require.Equal(t, Opened{KeyID: "default", Current: false}, how)
	})

	t.Run("UnderARenamedID", func(t *testing.T) {
		t.Parallel()
		single, err := New(k1)
		require.NoError(t, err)
		sealed := single.Seal([]byte("v"), []byte("row"))
		renamed, err := NewRing([]Key{{ID: "new", Secret: k2}, {ID: "k1", Secret: k1}})
		require.NoError(t, err)
		plain, how, err := renamed.OpenKey(sealed, []byte("row"))
		require.NoError(t, err)
		require.Equal(t, "v", string(plain))
		require.Equal(t, Opened{KeyID: "k1"}, how)

		// The primary's key under an old id is re-sealed too, so the id
		// in the value is the primary's again.
		primaryRenamed, err := NewRing([]Key{{ID: "k1", Secret: k1}})
		require.NoError(t, err)
		_, how, err = primaryRenamed.OpenKey(sealed, []byte("row"))
		require.NoError(t, err)
		require.Equal(t, Opened{KeyID: "k1"}, how)
	})

	t.Run("WrongKeyRefused", func(t *testing.T) {
		t.Parallel()
		stranger, err := NewRing([]Key{{ID: "new", Secret: NewKey()}})
		require.NoError(t, err)
		for _, sealed := range [][]byte{ring.Seal([]byte("v"), []byte("row")), sealLegacy(t, k1, []byte("v"), []byte("row"))} {
			_, _, err := stranger.OpenKey(sealed, []byte("row"))
			require.ErrorIs(t, err, ErrOpen)
		}
	})

	t.Run("HeaderIsAuthenticated", func(t *testing.T) {
		t.Parallel()
		// Another key's id written over the primary's: the value no longer
		// opens with any key.
		sealed := ring.Seal([]byte("v"), []byte("row"))
		require.Equal(t, append([]byte{version, 3}, "new"...), sealed[:5])
		other, err := NewRing([]Key{{ID: "new", Secret: k2}, {ID: "abc", Secret: k1}})
		require.NoError(t, err)
		_, err = other.Open(sealed, []byte("row"))
		require.NoError(t, err)
		forged := append(append([]byte{version, 3}, "abc"...), sealed[5:]...)
		_, err = other.Open(forged, []byte("row"))
		require.ErrorIs(t, err, ErrOpen)
		for _, short := range [][]byte{nil, {version}, {version, 3, 'n'}, sealed[:20]} {
			_, err = ring.Open(short, []byte("row"))
			require.ErrorIs(t, err, ErrOpen)
		}
	})
}

func TestNew_RejectsBadKeys(t *testing.T) {
	t.Parallel()
	_, err := New("not base64!")
	require.ErrorContains(t, err, "secrets.key is not valid base64")
	_, err = New(base64.StdEncoding.EncodeToString(make([]byte, 16)))
	require.ErrorContains(t, err, "secrets.key must decode to 32 bytes, got 16")
}

func TestNewRing_RejectsBadRings(t *testing.T) {
	t.Parallel()
	k1, k2 := NewKey(), NewKey()
	for name, tc := range map[string]struct {
		keys []Key
		want string
	}{
		"Empty":        {nil, "secrets.key or secrets.keys is required"},
		"DuplicateID":  {[]Key{{"a", k1}, {"a", k2}}, `secrets.keys: id "a" is listed twice`},
		"SameKeyTwice": {[]Key{{"a", k1}, {"b", k1}}, `secrets.keys "a" and "b" are the same key`},
		"BadBase64":    {[]Key{{"a", k1}, {"b", "%%%"}}, `secrets.keys "b" is not valid base64`},
		"WrongLength":  {[]Key{{"a", base64.StdEncoding.EncodeToString(make([]byte, 24))}}, `secrets.keys "a" must decode to 32 bytes, got 24`},
		"EmptyID":      {[]Key{{"", k1}}, `secrets.keys[0]: id "" must be 1 to 32`},
		"BadID":        {[]Key{{"a", k1}, {"b c", k2}}, `secrets.keys[1]: id "b c" must be 1 to 32`},
		"LongID":       {[]Key{{string(bytes.Repeat([]byte("x"), 33)), k1}}, "must be 1 to 32"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := NewRing(tc.keys)
			require.ErrorContains(t, err, tc.want)
			for _, k := range tc.keys {
				if len(k.Secret) > 4 {
					require.NotContains(t, err.Error(), k.Secret, "an error never shows a key")
				}
			}
		})
	}
}
