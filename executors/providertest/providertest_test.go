package providertest_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/providertest"
)

func TestServer_RecordsEachRequest(t *testing.T) {
	t.Parallel()
	var seen []string // the bodies the handler read
	var mu sync.Mutex
	s := providertest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(body))
		mu.Unlock()
		r.Header.Set("X-Changed", "by the handler")
		providertest.WriteJSON(w, http.StatusAccepted, map[string]any{"ok": true})
	}))

	req, err := http.NewRequest(http.MethodPost, s.URL()+"/a%2Fb/c?x=1&x=2", strings.NewReader(`{"n":1}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"ok":true}`, string(answer))

	resp, err = s.Client().Get(s.URL() + "/second")
	require.NoError(t, err)
	resp.Body.Close()

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	first := reqs[0]
	require.Equal(t, http.MethodPost, first.Method)
	require.Equal(t, "/a%2Fb/c", first.Path, "the path as sent, still escaped")
	require.Equal(t, url.Values{"x": {"1", "2"}}, first.Query)
	require.Equal(t, "Bearer tok", first.Header.Get("Authorization"))
	require.Empty(t, first.Header.Get("X-Changed"), "the recorded header is a copy")
	require.Equal(t, `{"n":1}`, string(first.Body))
	require.Equal(t, []string{`{"n":1}`, ``}, seen, "the handler reads the body the server recorded")
	require.Equal(t, http.MethodGet, reqs[1].Method)
	require.Equal(t, "/second", reqs[1].Path)

	reqs[0].Method = "changed"
	require.Equal(t, http.MethodPost, s.Requests()[0].Method, "Requests returns a copy")
}

func TestServer_Intercept(t *testing.T) {
	t.Parallel()
	var s *providertest.Server
	s = providertest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Intercepted(w, r) {
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	get := func() int {
		resp, err := s.Client().Get(s.URL() + "/x")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	require.Equal(t, http.StatusOK, get(), "no intercept: the fake answers")
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Has("pass") {
			return false
		}
		w.WriteHeader(http.StatusTeapot)
		return true
	})
	require.Equal(t, http.StatusTeapot, get())
	resp, err := s.Client().Get(s.URL() + "/x?pass")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the intercept lets the fake answer")
	require.Len(t, s.Requests(), 3, "requests are recorded either way")
}

func TestLog(t *testing.T) {
	t.Parallel()
	var l providertest.Log[int]
	require.Empty(t, l.All())
	var wg sync.WaitGroup
	var want []int
	for i := range 50 {
		want = append(want, i)
		wg.Go(func() { l.Add(i) })
	}
	wg.Wait()
	require.ElementsMatch(t, want, l.All(), "every Add is kept, whatever the order")
}
