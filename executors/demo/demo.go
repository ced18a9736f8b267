// Package demo is a built-in stand-in provider for `outboxd dev`, so a first
// run can go through invoke → approve → complete without any external
// account. It delivers messages to the daemon's own log instead of a real
// service. It is registered only by `outboxd dev`, never by `serve`.
package demo

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/outboxd/outboxd/executors"
)

const (
	// SourceID is the id of this source in the registry and in mode keys.
	SourceID = "demo"

	// ActionSendMessage "posts" a message: a write, so it waits for
	// approval by default.
	ActionSendMessage = "send_message"

	// ActionEcho answers with its params: a read, so it runs at once.
	ActionEcho = "echo"
)

//go:embed send_message.schema.json
var sendMessageSchema string

//go:embed echo.schema.json
var echoSchema string

// Config configures a Source.
type Config struct {
	// Logger receives every delivered message. Default: discard.
	Logger *slog.Logger
}

// Source is the demo source. It remembers which invocations it delivered,
// so a retry of the same invocation is reported as a conflict, as a real
// provider with idempotency keys would.
type Source struct {
	logger *slog.Logger

	mu        sync.Mutex
	delivered map[string]string // idempotency key → ts
}

var _ executors.Source = (*Source)(nil)

// New returns a demo source. A nil cfg uses the defaults.
func New(cfg *Config) *Source {
	if cfg == nil {
		cfg = &Config{}
	}
	return &Source{
		logger:    cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		delivered: map[string]string{},
	}
}

// ID returns SourceID.
func (s *Source) ID() string { return SourceID }

// ListActions returns the demo actions.
func (s *Source) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return []executors.Definition{
		{
			ID: ActionSendMessage,
			Description: "DEMO: post a message to a pretend channel. Nothing leaves outboxd: the message " +
				"is written to the outboxd dev console. Use it to try approvals before connecting a real provider.",
			Tier:       executors.TierR2,
			Params:     json.RawMessage(sendMessageSchema),
			Recipients: []string{"channel"},
			Delivery:   executors.DeliveryExactlyOnce,
		},
		{
			ID:          ActionEcho,
			Description: "DEMO: answer with the given text. A read action: it runs at once, without approval.",
			Tier:        executors.TierR0,
			Params:      json.RawMessage(echoSchema),
			Delivery:    executors.DeliveryExactlyOnce,
		},
	}, nil
}

// Execute runs one demo action.
func (s *Source) Execute(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	switch actionID {
	case ActionSendMessage:
		var p struct {
			Channel string `json:"channel"`
			Text    string `json:"text"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return executors.Result{}, &executors.Error{Code: "invalid_params", Message: err.Error()}
		}
		s.mu.Lock()
		ts, conflict := s.delivered[ec.IdempotencyKey]
		if !conflict {
			ts = fmt.Sprintf("%d.%06d", time.Now().Unix(), len(s.delivered)+1)
			s.delivered[ec.IdempotencyKey] = ts
		}
		s.mu.Unlock()
		if !conflict {
			s.logger.InfoContext(ctx, "demo provider: message delivered (nothing left outboxd)",
				"organization_id", ec.OrganizationID, "channel", p.Channel, "text", p.Text, "ts", ts)
		}
		data, _ := json.Marshal(map[string]any{"ok": true, "demo": true, "channel": p.Channel, "ts": ts})
		return executors.Result{Data: data, ProviderRef: ts, Conflict: conflict}, nil
	case ActionEcho:
		data, _ := json.Marshal(map[string]any{"demo": true, "echo": json.RawMessage(params)})
		return executors.Result{Data: data}, nil
	}
	return executors.Result{}, &executors.Error{
		Code:    "unknown_action",
		Message: fmt.Sprintf("the demo source has no action %q", actionID),
	}
}
