// Package signintest runs a real OpenID provider for tests of the console's
// sign-in: zitadel/oidc's provider (pkg/op) with its example storage and
// login page, on a loopback server. Users sign in on its login form; the
// ID tokens it issues for the Scope scope carry the claims the test gives
// each user.
package signintest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	exstorage "github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

const (
	// ClientID and ClientSecret are outboxd's client at the provider.
	ClientID     = "outboxd-console"
	ClientSecret = "console-client-secret-0123456789"
	// Scope asks for the claims the test gives each user.
	Scope = "outboxd"
	// Password is every user's password.
	Password = "verysecure"
	// Admin and Member are the subjects (ids) of the example storage's two
	// users.
	Admin  = "id1"
	Member = "id2"
)

// Provider is a running OpenID provider.
type Provider struct {
	*httptest.Server
	// Issuer is its issuer URL, its server's URL.
	Issuer string

	mu        sync.Mutex
	redirects []string
	logouts   []string
	claims    map[string]map[string]any
}

// Start runs a provider until the test ends. claims are added to the ID
// tokens of each user (by subject) when the Scope scope is asked for.
func Start(t testing.TB, claims map[string]map[string]any) *Provider {
	t.Helper()
	return start(t, claims, false, nil)
}

// StartTLS runs a provider over https (its server's own certificate: make
// requests with its Client()) until the test ends, its discovery document
// changed by edit first when edit is not nil.
func StartTLS(t testing.TB, claims map[string]map[string]any, edit func(doc map[string]any)) *Provider {
	t.Helper()
	return start(t, claims, true, edit)
}

func start(t testing.TB, claims map[string]map[string]any, tls bool, edit func(doc map[string]any)) *Provider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	p := &Provider{Server: srv, Issuer: scheme + srv.Listener.Addr().String(), claims: claims}
	clients := map[string]*exstorage.Client{ClientID: exstorage.WebClient(ClientID, ClientSecret)}
	st := &storage{Storage: exstorage.NewStorageWithClients(exstorage.NewUserStore(p.Issuer), clients), p: p}
	var h http.Handler = exampleop.SetupServer(p.Issuer, st, nil, false)
	if edit != nil {
		h = editDiscovery(h, edit)
	}
	srv.Config.Handler = h
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return p
}

// editDiscovery serves h with its discovery document changed by edit.
func editDiscovery(h http.Handler, edit func(doc map[string]any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		doc := map[string]any{}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		edit(doc)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// Username is the login name of the user with subject id.
func (p *Provider) Username(id string) string {
	if id == Admin {
		return "test-user@" + strings.Split(p.Listener.Addr().String(), ":")[0]
	}
	return "test-user2"
}

// AllowOrigin registers origin's /auth/callback as a redirect URL of the
// client, and its /console/ as a post-logout redirect URL.
func (p *Provider) AllowOrigin(origin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redirects = append(p.redirects, origin+"/auth/callback")
	p.logouts = append(p.logouts, origin+"/console/")
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// LogIn goes to location (an authorization URL, or outboxd's /auth/login)
// with client, fills the provider's login form as the user with subject
// id and returns the answer it ends on, as client's redirect policy
// decides (its body read and closed).
func (p *Provider) LogIn(t testing.TB, client *http.Client, location, id string) *http.Response {
	t.Helper()
	resp, err := client.Get(location)
	if err != nil {
		t.Fatalf("signintest: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginID.FindSubmatch(page)
	if m == nil {
		t.Fatalf("signintest: no login form at %s: %s", location, page)
	}
	resp, err = client.PostForm(p.URL+"/login/username", url.Values{"id": {string(m[1])}, "username": {p.Username(id)}, "password": {Password}})
	if err != nil {
		t.Fatalf("signintest: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// storage is the example storage with outboxd's client and claims.
type storage struct {
	*exstorage.Storage
	p *Provider
}

func (s *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil || id != ClientID {
		return c, err
	}
	return &client{Client: c, p: s.p}, nil
}

func (s *storage) SetUserinfoFromRequest(ctx context.Context, userinfo *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, userinfo, token, scopes); err != nil {
		return err
	}
	if slices.Contains(scopes, Scope) {
		s.p.mu.Lock()
		defer s.p.mu.Unlock()
		for k, v := range s.p.claims[token.GetSubject()] {
			userinfo.AppendClaims(k, v)
		}
	}
	return nil
}

// client is outboxd's client with the redirect URLs registered.
type client struct {
	op.Client
	p *Provider
}

func (c *client) RedirectURIs() []string {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return slices.Clone(c.p.redirects)
}

func (c *client) PostLogoutRedirectURIs() []string {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return slices.Clone(c.p.logouts)
}

func (c *client) IsScopeAllowed(scope string) bool {
	return scope == Scope || c.Client.IsScopeAllowed(scope)
}
