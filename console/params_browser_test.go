package console_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestBrowser_ParamsShownWhole: the params an agent sends to a connector's
// tool, whose schema lets it add any, are each on the card the approver
// decides by, whatever their names.
func TestBrowser_ParamsShownWhole(t *testing.T) {
	mcp := newToolServer(t)
	mcp.addDeploy(`{"type":"object","properties":{"service":{"type":"string"},"options":{"type":"object"}},"required":["service"]}`)
	b := apptest.Start(t, nil)
	br := newBrowser(t, b)
	r := b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "deployer", "url": mcp.URL, "transport": "remote_http"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	conn := r.Body["connector"].(map[string]any)
	r = b.Do("PUT", "/v1/connectors/"+conn["id"].(string)+"/tools", b.Owner(), map[string]string{"deploy": "require_approval"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	invoke := func(params map[string]any) string {
		t.Helper()
		r := b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", b.Sandbox(),
			map[string]any{"integration": conn["source_id"], "action": "deploy", "params": params})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		return r.Body["invocation_id"].(string)
	}

	owner := br.tab()
	defer owner.close()
	owner.signIn(b.Owner())

	t.Run("KeysNamedLikeObjectMembers", func(t *testing.T) {
		// The form once asked `name in {}`, which is true of an Object's
		// own members: a param named constructor or toString was left out.
		id := invoke(map[string]any{
			"service": "web", "constructor": "top-level-extra", "toString": "another-extra",
			"options": map[string]any{"valueOf": "nested-extra", "region": "eu"},
		})
		card := fmt.Sprintf(`[data-invocation=%q]`, id)
		owner.run("card", chromedp.WaitVisible(card+` .params-form`, chromedp.ByQuery))
		form := owner.text(card + ` .params-form`)
		for _, want := range []string{"service", "web", "constructor", "top-level-extra", "toString", "another-extra", "valueOf", "nested-extra", "region", "eu"} {
			require.Contains(t, form, want, "the card's params show every param")
		}
		require.Equal(t, 5, owner.count(card+` .params-form .field`), "one field per value, none made up")
		r := b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]any{"reason": "test over"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	})
}
