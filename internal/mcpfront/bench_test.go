package mcpfront_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/outbox"
)

// doneOutbox completes every invoke at once, so that a call's cost is the
// front door's and the protocol's alone.
type doneOutbox struct{ mcpfront.Outbox }

func (doneOutbox) Watch(context.Context, string) *outbox.Watch { return nil }

func (doneOutbox) Invoke(context.Context, *outbox.InvokeParams) (invocation.Invocation, error) {
	return invocation.Invocation{ID: uuid.New(), Status: invocation.StatusCompleted,
		Result: json.RawMessage(`{"ok":true,"channel":"C1","ts":"1503435956.000247"}`)}, nil
}

// BenchmarkToolsCall is one tools/call of an allow-mode action through the
// SDK's Streamable HTTP server and the front door, against an outbox that
// answers at once: what the protocol costs a call, in CPU and allocations,
// before any database work. 2025-11-25 calls go in one session; 2026-07-28
// calls each stand alone.
func BenchmarkToolsCall(b *testing.B) {
	front := mcpfront.New(&mcpfront.Deps{Outbox: doneOutbox{}, Catalog: fakeCatalog{n: 1}})
	claims := &auth.Claims{Org: "org", Kind: auth.KindSandbox, SessionID: "s"}
	post := func(body, version, session string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer verified-upstream")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			r.Header.Set("Mcp-Protocol-Version", version)
		}
		if version >= "2026-07-28" {
			// SEP-2243's standard headers.
			r.Header.Set("Mcp-Method", "tools/call")
			r.Header.Set("Mcp-Name", "demo.a0")
		}
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		w := httptest.NewRecorder()
		front.ServeMCP(w, r, claims, "http://"+r.Host)
		return w
	}
	const args = `"name":"demo.a0","arguments":{"channel":"C1","text":"bench message"}`

	b.Run("2025-11-25", func(b *testing.B) {
		w := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`, "", "")
		session := w.Header().Get("Mcp-Session-Id")
		require.NotEmpty(b, session)
		require.Equal(b, http.StatusAccepted, post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "2025-11-25", session).Code)
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + args + `}}`
		b.ReportAllocs()
		for b.Loop() {
			if w := post(body, "2025-11-25", session); !strings.Contains(w.Body.String(), `"structuredContent"`) {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
	b.Run("2026-07-28", func(b *testing.B) {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + args + `,` + meta + `}}`
		b.ReportAllocs()
		for b.Loop() {
			if w := post(body, "2026-07-28", ""); !strings.Contains(w.Body.String(), `"structuredContent"`) {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}
