package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// requireTruncated checks the invariants of a pruned document and returns it
// decoded.
func requireTruncated(t *testing.T, got json.RawMessage, limit int) map[string]any {
	t.Helper()
	require.True(t, json.Valid(got), "invalid JSON: %s", got)
	require.LessOrEqual(t, len(got), limit)
	require.True(t, utf8.Valid(got))
	var decoded map[string]any
	require.NoError(t, json.Unmarshal(got, &decoded))
	require.Equal(t, true, decoded["_truncated"])
	return decoded
}

func TestTruncate(t *testing.T) {
	t.Parallel()

	t.Run("SmallUnchanged", func(t *testing.T) {
		t.Parallel()
		doc := json.RawMessage(`{ "a" : [1, 2.50, "x"], "b": null }`)
		require.Equal(t, string(doc), string(Truncate(doc, MaxStoredBytes)))
	})

	t.Run("CompactFitsReturnsCompact", func(t *testing.T) {
		t.Parallel()
		doc := json.RawMessage("{\n" + strings.Repeat(" ", 200) + `"a": 1` + "\n}")
		require.Equal(t, `{"a":1}`, string(Truncate(doc, 100)))
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "null", string(Truncate(nil, MaxStoredBytes)))
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		got := Truncate(json.RawMessage(`{"a":`), MaxStoredBytes)
		decoded := requireTruncated(t, got, MaxStoredBytes)
		require.Equal(t, true, decoded["_invalid"])
	})

	t.Run("LargeObjectKeepsSmallMembers", func(t *testing.T) {
		t.Parallel()
		doc := fmt.Sprintf(`{"id":"inv_1","body":%q,"status":"ok","blob":%q}`,
			strings.Repeat("b", 50_000), strings.Repeat("z", 80_000))
		got := Truncate(json.RawMessage(doc), 1024)
		decoded := requireTruncated(t, got, 1024)
		require.Equal(t, "inv_1", decoded["id"])
		require.Equal(t, "ok", decoded["status"])
		body, ok := decoded["body"].(string)
		require.True(t, ok, "body pruned rather than dropped")
		require.True(t, strings.HasSuffix(body, "…"))
		require.NotContains(t, decoded, "blob")
		require.Greater(t, len(got), 900, "budget mostly used")
	})

	t.Run("ExistingTruncatedMemberReplaced", func(t *testing.T) {
		t.Parallel()
		doc := fmt.Sprintf(`{"_truncated":false,"s":%q}`, strings.Repeat("s", 5000))
		got := Truncate(json.RawMessage(doc), 256)
		requireTruncated(t, got, 256)
		require.Equal(t, 1, strings.Count(string(got), `"_truncated"`))
	})

	t.Run("LargeArrayDropsTrailing", func(t *testing.T) {
		t.Parallel()
		elems := make([]string, 10_000)
		for i := range elems {
			elems[i] = fmt.Sprintf(`{"n":%d}`, i)
		}
		got := Truncate(json.RawMessage("["+strings.Join(elems, ",")+"]"), 2048)
		decoded := requireTruncated(t, got, 2048)
		arr, ok := decoded["value"].([]any)
		require.True(t, ok)
		require.NotEmpty(t, arr)
		for i, e := range arr {
			require.Equal(t, map[string]any{"n": float64(i)}, e, "leading elements kept in order")
		}
	})

	t.Run("LargeString", func(t *testing.T) {
		t.Parallel()
		doc, err := json.Marshal(strings.Repeat("日本語\n\"", 10_000))
		require.NoError(t, err)
		got := Truncate(doc, 500)
		decoded := requireTruncated(t, got, 500)
		s, ok := decoded["value"].(string)
		require.True(t, ok)
		require.True(t, strings.HasPrefix(s, "日本語\n\"日本語"))
		require.True(t, strings.HasSuffix(s, "…"))
		require.True(t, utf8.ValidString(s))
	})

	t.Run("LargeNested", func(t *testing.T) {
		t.Parallel()
		inner := fmt.Sprintf(`{"list":[%q,%q,{"deep":[[[%q]]]}],"n":1}`,
			strings.Repeat("x", 3000), strings.Repeat("y", 3000), strings.Repeat("q", 30_000))
		doc := fmt.Sprintf(`{"result":{"data":%s,"meta":{"page":1}}}`, inner)
		got := Truncate(json.RawMessage(doc), MinTruncateBytes*20)
		decoded := requireTruncated(t, got, MinTruncateBytes*20)
		result := decoded["result"].(map[string]any)
		require.Equal(t, map[string]any{"page": float64(1)}, result["meta"])
	})

	t.Run("HugeNumberTopLevel", func(t *testing.T) {
		t.Parallel()
		got := Truncate(json.RawMessage(strings.Repeat("9", 1000)), 100)
		decoded := requireTruncated(t, got, 100)
		require.NotContains(t, decoded, "value")
	})

	t.Run("DeepNesting", func(t *testing.T) {
		t.Parallel()
		doc := strings.Repeat(`{"a":[`, 5000) + `"` + strings.Repeat("x", 100) + `"` + strings.Repeat(`]}`, 5000)
		got := Truncate(json.RawMessage(doc), 1000)
		requireTruncated(t, got, 1000)
	})

	t.Run("LimitBelowMinimumRaised", func(t *testing.T) {
		t.Parallel()
		doc := json.RawMessage(fmt.Sprintf(`[%q]`, strings.Repeat("a", 1000)))
		got := Truncate(doc, 1)
		requireTruncated(t, got, MinTruncateBytes)
	})

	t.Run("EveryLimit", func(t *testing.T) {
		t.Parallel()
		doc := json.RawMessage(`{"id":12345,"tags":["alpha","beta","gamma","delta"],"text":"héllo wörld \u0000 tab\t","nested":{"k":[1,2,{"z":"zz"}],"t":true},"n":null}`)
		for limit := MinTruncateBytes; limit < len(doc); limit++ {
			requireTruncated(t, Truncate(doc, limit), limit)
		}
	})
}

func BenchmarkTruncate(b *testing.B) {
	items := make([]map[string]any, 0, 4000)
	for i := range 4000 {
		items = append(items, map[string]any{
			"id":     fmt.Sprintf("item_%d", i),
			"score":  float64(i) * 1.5,
			"text":   strings.Repeat("lorem ipsum ", 15),
			"labels": []string{"a", "b", "c"},
			"owner":  map[string]any{"name": "bob", "active": i%2 == 0},
		})
	}
	doc, err := json.Marshal(map[string]any{"items": items, "cursor": "next"})
	require.NoError(b, err)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out := Truncate(doc, MaxStoredBytes)
		if len(out) > MaxStoredBytes {
			b.Fatal("over limit")
		}
	}
}
