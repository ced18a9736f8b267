package credential

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sethvargo/go-retry"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
)

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	// URL receives POST {"organization_id","integration","user_id","refresh"}
	// and answers {"access_token","token_type","expires_at","status"}.
	// Required.
	URL string
	// ServiceToken mints the bearer token outboxd presents for org.
	// Required.
	ServiceToken func(org string) (string, error)
	// Timeout bounds one broker request. Default 10s.
	Timeout time.Duration
	// Attempts is how many times a transient failure is tried. Default 3.
	Attempts int
	// RetryBase is the first retry's delay (exponential, jittered).
	// Default 200ms.
	RetryBase time.Duration
	// DefaultTTL caches answers without expires_at. Default 5m.
	DefaultTTL time.Duration
	// HTTPClient sends the requests. Default a new client.
	HTTPClient *http.Client
}

// WithDefaults returns a copy with unset fields defaulted.
func (c *BrokerConfig) WithDefaults() *BrokerConfig {
	return &BrokerConfig{
		URL:          c.URL,
		ServiceToken: c.ServiceToken,
		Timeout:      cmp.Or(c.Timeout, 10*time.Second),
		Attempts:     cmp.Or(c.Attempts, 3),
		RetryBase:    cmp.Or(c.RetryBase, 200*time.Millisecond),
		DefaultTTL:   cmp.Or(c.DefaultTTL, 5*time.Minute),
		HTTPClient:   cmp.Or(c.HTTPClient, &http.Client{}),
	}
}

func (c *BrokerConfig) validate() error {
	if c.URL == "" {
		return errors.New("tokens.broker_url is required when tokens.source is broker")
	}
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("tokens.broker_url must be an http or https URL with a host")
	}
	if c.ServiceToken == nil {
		return errors.New("credential: broker needs a service token minter")
	}
	return nil
}

// Broker resolves tokens from an external token broker (an OAuth
// connection service), caching each answer until it expires.
type Broker struct {
	cfg *BrokerConfig

	mu    sync.Mutex
	cache map[Request]Token
}

// NewBroker returns a Broker.
func NewBroker(config *BrokerConfig) (*Broker, error) {
	cfg := config.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Broker{cfg: cfg, cache: map[Request]Token{}}, nil
}

// skew retires cached tokens a little before they expire.
const skew = 30 * time.Second

// Token implements the worker's token source. refresh skips the cache and
// asks the broker for a fresh token (after a provider rejected the old one).
func (b *Broker) Token(ctx context.Context, req Request, refresh bool) (Token, error) {
	req.Version = time.Time{} // the broker's answers expire; stored versions do not apply
	if !refresh {
		b.mu.Lock()
		tok, ok := b.cache[req]
		b.mu.Unlock()
		if ok && time.Now().Add(skew).Before(tok.ExpiresAt) {
			return tok, nil
		}
	}
	backoff := retry.WithMaxRetries(uint64(b.cfg.Attempts-1), retry.WithJitterPercent(20, retry.NewExponential(b.cfg.RetryBase)))
	tok, err := retry.DoValue(ctx, backoff, func(ctx context.Context) (Token, error) {
		return b.fetch(ctx, req, refresh)
	})
	if err != nil {
		return Token{}, err
	}
	cached := tok
	if cached.ExpiresAt.IsZero() {
		cached.ExpiresAt = time.Now().Add(b.cfg.DefaultTTL)
	}
	b.mu.Lock()
	b.cache[req] = cached
	b.mu.Unlock()
	return tok, nil
}

type brokerRequest struct {
	OrganizationID string `json:"organization_id"`
	Integration    string `json:"integration"`
	UserID         string `json:"user_id,omitempty"`
	Refresh        bool   `json:"refresh"`
}

type brokerAnswer struct {
	AccessToken string     `json:"access_token"`
	TokenType   string     `json:"token_type"`
	ExpiresAt   *time.Time `json:"expires_at"`
	Status      string     `json:"status"`
}

// fetch asks the broker once. Transient failures come back wrapped in
// retry.RetryableError so DoValue tries again.
func (b *Broker) fetch(ctx context.Context, req Request, refresh bool) (Token, error) {
	serviceToken, err := b.cfg.ServiceToken(req.Org)
	if err != nil {
		return Token{}, fmt.Errorf("minting the broker token: %w", err)
	}
	body, _ := json.Marshal(brokerRequest{OrganizationID: req.Org, Integration: req.Integration, UserID: req.UserID, Refresh: refresh})
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, b.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return Token{}, fmt.Errorf("token broker request: %w", err)
	}
	httpReq.Header.Set("Authorization", "Bearer "+serviceToken)
	httpReq.Header.Set("Content-Type", "application/json")
	resp, err := b.cfg.HTTPClient.Do(httpReq)
	if err != nil {
		return Token{}, retry.RetryableError(fmt.Errorf("token broker unreachable: %w", err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Token{}, retry.RetryableError(fmt.Errorf("reading token broker answer: %w", err))
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return Token{}, errs.Errorf(errs.NotFound, "no credential stored for %s (the broker has no connection)", req.Integration)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return Token{}, retry.RetryableError(fmt.Errorf("token broker answered %d", resp.StatusCode))
	case resp.StatusCode != http.StatusOK:
		return Token{}, fmt.Errorf("%w: HTTP %d", ErrRefused, resp.StatusCode)
	}
	var ans brokerAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return Token{}, retry.RetryableError(fmt.Errorf("token broker answer is not JSON: %w", err))
	}
	if ans.Status != "" && ans.Status != "active" {
		return Token{}, fmt.Errorf("%w: %s is %s", ErrInactive, req.Integration, ans.Status)
	}
	if ans.AccessToken == "" {
		return Token{}, fmt.Errorf("%w: no access_token for %s", ErrRefused, req.Integration)
	}
	tok := Token{Value: ans.AccessToken}
	switch ans.TokenType {
	case executors.TokenKindAPIKey:
		tok.Kind = executors.TokenKindAPIKey
	case executors.TokenKindOAuth, "bearer", "Bearer":
		tok.Kind = executors.TokenKindOAuth
	}
	if ans.ExpiresAt != nil {
		tok.ExpiresAt = *ans.ExpiresAt
	}
	return tok, nil
}
