package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestBrowser_ParamsShownWhole: the params an agent sends to a connector's
// tool, whose schema lets it add any, are each on the card the approver
// decides by, whatever their names.
func TestBrowser_ParamsShownWhole(t *testing.T) {
	mcp := newToolServer(t)
	mcp.addDeploy(`{"type":"object","properties":{"service":{"type":"string"},"options":{"type":"object"}},"required":["service"]}`)
	// Its description ends in Unicode tag characters, which show as
	// nothing and spell "Ignore" for whoever reads the text.
	mcp.sdk.AddTool(&mcpsdk.Tool{Name: "notes", Description: "Read the notes.\U000E0049\U000E0067\U000E006E\U000E006F\U000E0072\U000E0065", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "notes"}}}, nil
		})
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

	t.Run("InvisibleCharactersShown", func(t *testing.T) {
		// A right-to-left override makes "web\u202edorp" read "webprod",
		// and a zero-width space makes two names read alike: the card, its
		// preview and the edit form show such characters by their codes.
		id := invoke(map[string]any{"service": "web\u202edorp", "options": map[string]any{"region\u200b": "eu"}})
		card := fmt.Sprintf(`[data-invocation=%q]`, id)
		owner.run("card", chromedp.WaitVisible(card+` .params-form`, chromedp.ByQuery), chromedp.WaitVisible(card+` .preview-tool_args`, chromedp.ByQuery))
		form := owner.text(card + ` .params-form`)
		require.Contains(t, form, "web⟨U+202E⟩dorp")
		require.Contains(t, form, "region⟨U+200B⟩")
		require.Equal(t, 2, owner.count(card+` .params-form .hidden-badge`), "each field holding one is marked")
		require.Contains(t, owner.text(card+` .preview`), "web⟨U+202E⟩dorp", "the preview too")
		owner.run("edit", chromedp.Click(card+` button[aria-label^="Edit, then approve"]`, chromedp.ByQuery),
			chromedp.WaitVisible(card+` .edit-approve textarea`, chromedp.ByQuery))
		var value string
		owner.eval("the form's params", fmt.Sprintf(`document.querySelector(%q).value`, card+` .edit-approve textarea`), &value)
		require.Contains(t, value, `web\u202edorp`, "the edit form writes it as an escape")
		require.NotContains(t, value, "\u202e")
		owner.shot("40-invisible-characters")
		r := b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]any{"reason": "test over"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

		row := `[data-tool="notes"]`
		owner.run("tool review", chromedp.Navigate(br.base+"/console/#/connectors/"+conn["id"].(string)), chromedp.WaitVisible(row, chromedp.ByQuery))
		require.Contains(t, owner.text(row), "Read the notes.⟨U+E0049⟩⟨U+E0067⟩", "the tool review shows a description's hidden text")
	})
}
