package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/policy"
)

// Guide renders the markdown guide of one integration for a caller: every
// action with its description, resolved mode, params and an example.
func (r *Reader) Guide(ctx context.Context, c *Caller, integration string) (string, error) {
	srcs, err := r.sources(ctx, c, false)
	if err != nil {
		return "", err
	}
	i := -1
	for j, src := range srcs {
		if src.id == integration {
			i = j
		}
	}
	if i < 0 {
		return "", fmt.Errorf("%w: integration %s is not available to this session", errs.NotFound, integration)
	}
	resolve, err := r.modeResolver(ctx, c)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s actions\n\n", integration)
	fmt.Fprintf(&b, "Invoke an action with `POST /v1/sessions/{session_id}/actions/invoke` and the body "+
		"`{\"integration\": %q, \"action\": \"<action>\", \"params\": {...}}`.\n", integration)
	b.WriteString("The mode below is what applies to you now: `allow` runs at once, `require_approval` waits for a human " +
		"(poll the invocation), `deny` is refused.\n")
	if guide := strings.TrimSpace(srcs[i].src.Guide); guide != "" {
		fmt.Fprintf(&b, "\n%s\n", guide)
	}
	if srcs[i].err != nil {
		return "", fmt.Errorf("%w: %s", errs.SourceUnavailable, srcs[i].err)
	}
	for _, d := range srcs[i].defs {
		res, drifted := resolve(srcs[i], d)
		fmt.Fprintf(&b, "\n## %s.%s\n\n%s\n\n", integration, d.ID, strings.TrimSpace(d.Description))
		tier := policy.TierOf(string(d.Tier))
		fmt.Fprintf(&b, "- Mode: `%s` (%s)\n- Risk: `%s` (%s)\n", res.Mode, res.Source, tier, tier.Risk())
		fmt.Fprintf(&b, "- Delivery: `%s` (%s)\n", d.Delivery.OrDefault(), deliveryWords[d.Delivery.OrDefault()])
		if drifted {
			b.WriteString("- Changed since an admin reviewed it: runs only with approval until re-reviewed\n")
		}
		if reason := srcs[i].src.Disabled; reason != "" {
			fmt.Fprintf(&b, "- Disabled: %s\n", reason)
		}
		b.WriteString("\n### Params\n\n")
		renderParams(&b, d.Params)
		example := markdownJSON(map[string]any{"integration": integration, "action": d.ID, "params": exampleParams(d.Params)}, "  ")
		fmt.Fprintf(&b, "\n### Example\n\n```json\n%s\n```\n", example)
	}
	return b.String(), nil
}

// deliveryWords says in the guide what each delivery guarantee means when
// an answer is lost and outboxd runs the action again.
var deliveryWords = map[executors.Delivery]string{
	executors.DeliveryExactlyOnce: "running it again after a lost answer cannot act twice",
	executors.DeliveryReconciled:  "before running it again after a lost answer, outboxd looks for what the first attempt did and completes with it",
	executors.DeliveryAtLeastOnce: "running it again after a lost answer may act twice",
}

// schemaDoc is the part of a JSON Schema the guide renders.
type schemaDoc struct {
	Type        any                  `json:"type"`
	Description string               `json:"description"`
	Properties  map[string]schemaDoc `json:"properties"`
	Required    []string             `json:"required"`
	Items       *schemaDoc           `json:"items"`
	Enum        []any                `json:"enum"`
	Default     any                  `json:"default"`
	Examples    []any                `json:"examples"`
	Minimum     *float64             `json:"minimum"`
	Maximum     *float64             `json:"maximum"`
	Format      string               `json:"format"`
}

func (d schemaDoc) typeName() string {
	t := fmt.Sprint(d.Type)
	if d.Type == nil {
		t = "any"
	}
	if t == "array" && d.Items != nil {
		t = "array of " + d.Items.typeName()
	}
	if d.Format != "" {
		t += " (" + d.Format + ")"
	}
	return t
}

func renderParams(b *strings.Builder, schema json.RawMessage) {
	var doc schemaDoc
	if err := json.Unmarshal(schema, &doc); err != nil || len(doc.Properties) == 0 {
		b.WriteString("None.\n")
		return
	}
	required := map[string]bool{}
	for _, r := range doc.Required {
		required[r] = true
	}
	b.WriteString("| name | type | required | description |\n|---|---|---|---|\n")
	for _, name := range sortedKeys(doc.Properties) {
		p := doc.Properties[name]
		desc := strings.ReplaceAll(strings.TrimSpace(p.Description), "\n", " ")
		var notes []string
		if len(p.Enum) > 0 {
			notes = append(notes, "one of "+joinValues(p.Enum))
		}
		if p.Default != nil {
			notes = append(notes, "default "+joinValues([]any{p.Default}))
		}
		if p.Minimum != nil || p.Maximum != nil {
			notes = append(notes, fmt.Sprintf("range %v–%v", deref64(p.Minimum, "…"), deref64(p.Maximum, "…")))
		}
		if len(notes) > 0 {
			desc = strings.TrimSpace(desc + " (" + strings.Join(notes, "; ") + ")")
		}
		req := "no"
		if required[name] {
			req = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", name, p.typeName(), req, strings.ReplaceAll(desc, "|", "\\|"))
	}
}

// exampleParams builds an example params object from a schema: the
// required properties, each with its first example, default or enum value,
// or a placeholder of its type.
func exampleParams(schema json.RawMessage) map[string]any {
	var doc schemaDoc
	out := map[string]any{}
	if json.Unmarshal(schema, &doc) != nil {
		return out
	}
	for _, name := range doc.Required {
		p := doc.Properties[name]
		switch {
		case len(p.Examples) > 0:
			out[name] = p.Examples[0]
		case p.Default != nil:
			out[name] = p.Default
		case len(p.Enum) > 0:
			out[name] = p.Enum[0]
		default:
			switch p.typeName() {
			case "integer", "number":
				out[name] = 1
			case "boolean":
				out[name] = true
			case "object":
				out[name] = map[string]any{}
			default:
				if strings.HasPrefix(p.typeName(), "array") {
					out[name] = []any{}
				} else {
					out[name] = "<" + name + ">"
				}
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = "`" + markdownJSON(v, "") + "`"
	}
	return strings.Join(parts, ", ")
}

// markdownJSON encodes v for a markdown document, where <, > and & need no
// escaping: an agent reading the guide sees "<channel>", not "\u003cchannel\u003e".
func markdownJSON(v any, indent string) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

func deref64(f *float64, none string) string {
	if f == nil {
		return none
	}
	return fmt.Sprint(*f)
}

// BootstrapGuide is the static guide an agent reads first: how to list,
// read guides and invoke. It names no integration: what is connected is
// found at runtime.
const BootstrapGuide = `# Actions

You can act on external services (Slack, Linear, Sentry, GitHub, MCP
tools...) through outboxd. You never hold their credentials; outboxd runs each
action for you after checking policy.

## With the outboxd command

OUTBOXD_URL (the outboxd API) and OUTBOXD_TOKEN (your sandbox token) must be
set; your session comes from the token.

1. List what you can use:
   outboxd actions list            (one line per action: ACTION MODE TIER DELIVERY DESCRIPTION)
   outboxd actions list --json     (the full catalog, with each action's params schema)
2. Read an integration's guide before using it:
   outboxd actions guide <integration>
3. Run an action:
   outboxd actions run <integration> <action> --params '{"key": "value"}'
   If a human must approve, it waits (progress on stderr) for the decision
   and then for the result; --timeout 10m gives up earlier. The result JSON
   is printed on stdout. Running the same command again never acts twice:
   it finds the same invocation and prints its outcome.
4. Withdraw one of your invocations that has not run yet (pending, or
   approved but not started):
   outboxd actions cancel <invocation_id>
   Exit 1 if it has already started or ended.

Exit codes: 0 completed, 1 failed, 2 denied (by policy or by a human),
3 expired (nobody decided in time), 4 usage or auth error (bad arguments,
params that do not match the schema, a wrong, expired or revoked token). Do not
retry after 2 or 3 unchanged: the same command answers with the same
invocation; --idempotency-key <new key> asks anew when a human wants that.

## Over HTTP

1. GET /v1/sessions/{session_id}/actions/available
   Each action has a source, an action id, a description, a risk tier
   (R0, R1: reads; R2: writes; R3, R4: destructive or critical, always
   approved by a human), the mode that applies to you and the JSON Schema
   of its params.
2. GET /v1/sessions/{session_id}/actions/guide/{integration}
3. POST /v1/sessions/{session_id}/actions/invoke
   {"integration": "<source>", "action": "<action>", "params": {...}}
   Send an Idempotency-Key header when you may retry the same request.

What the answer means:
- 200 with status "completed": the action ran; "result" holds the
  provider's answer. 200 with status "skipped": a gate of the request
  ended it before any call (nothing was sent; "result" is null and the
  invocation's error says why).
- 202 with status "pending": a human must approve. Wait on
  GET /v1/sessions/{session_id}/events (Server-Sent Events; open it before
  invoking) for action_approval_result and then action_completed of your
  invocation_id, or poll
  GET /v1/sessions/{session_id}/actions/invocations/{invocation_id}
  until its status is completed, denied or expired. Do not invoke again.
  To withdraw it instead: POST
  /v1/sessions/{session_id}/actions/invocations/{invocation_id}/cancel
  (200 with it cancelled; 409 once it has started or ended).
- 202 with status "approved": accepted and still running; wait the same way.
- 401: the token is wrong, expired or revoked (token_revoked). Do not
  retry with it.
- 403: policy denies this action. Do not retry it.
- 400: your params do not match the schema; error.details.fields says which.
- 429: too many pending approvals or invokes; wait before trying again.
- 502: the provider refused or failed; the invocation's error says why.
- Repeating an Idempotency-Key answers for where its invocation stands
  now: also 403 once a human denied it, 410 once its approval window
  closed, 409 once it was cancelled.

Once an invocation is decided, GET
/v1/sessions/{session_id}/actions/invocations/{invocation_id}/result-envelope
gives its outcome in one shape: status succeeded, queued (a human must
approve), rejected (policy, a human, a gate or time stopped it) or failed,
with the output and feedback saying why.
`
