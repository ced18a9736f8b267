package httpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Server is an http.Server with cfg's timeouts and connection cap.
type Server struct {
	*http.Server
	cfg     Config
	evicted prometheus.Counter

	mu sync.Mutex
	ln *limitListener
}

// New returns a server for handler. reg, when not nil, receives the
// server's metrics.
func New(handler http.Handler, cfg *Config, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg.WithDefaults()}
	s.evicted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outboxd_http_connections_evicted_total",
		Help: "Idle or not yet requesting connections closed to make room at http.max_conns.",
	})
	s.Server = &http.Server{
		Handler:           liftReadDeadline(handler, s.cfg.WriteTimeout),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ConnState: func(c net.Conn, state http.ConnState) {
			if ln := s.listener(); ln != nil {
				ln.connState(c, state)
			}
		},
	}
	if reg != nil {
		open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "outboxd_http_connections",
			Help: "HTTP connections the server holds; at most http.max_conns.",
		}, func() float64 {
			if ln := s.listener(); ln != nil {
				return float64(ln.open())
			}
			return 0
		})
		limit := prometheus.NewGauge(prometheus.GaugeOpts{Name: "outboxd_http_max_conns", Help: "The effective http.max_conns."})
		limit.Set(float64(s.cfg.MaxConns))
		for _, c := range []prometheus.Collector{s.evicted, open, limit} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Config is the server's configuration with its defaults applied.
func (s *Server) Config() Config { return s.cfg }

func (s *Server) listener() *limitListener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ln
}

// Serve serves on ln, holding at most MaxConns of its connections.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = newLimitListener(ln, s.cfg.MaxConns, s.evicted.Inc)
	limited := s.ln
	s.mu.Unlock()
	return s.Server.Serve(limited)
}

type writeTimeoutKey struct{}

// ExtendWrite moves the write deadline of r's response to d from now plus
// the server's write timeout: for a handler that waits up to d before it
// answers. Without a Server (a handler under test) it does nothing.
func ExtendWrite(w http.ResponseWriter, r *http.Request, d time.Duration) {
	timeout, ok := r.Context().Value(writeTimeoutKey{}).(time.Duration)
	if !ok {
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + timeout))
}

// WriteOverTime returns w with its write deadline moved to the server's
// write timeout from each write: for a response written over a long time,
// such as a stream that stays open, or a wait of any length before the
// answer. A client that stops reading still fails the write that follows.
// Without a Server (a handler under test) it returns w.
func WriteOverTime(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	timeout, ok := r.Context().Value(writeTimeoutKey{}).(time.Duration)
	if !ok {
		return w
	}
	return &overTime{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

type overTime struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (o *overTime) Write(p []byte) (int, error) {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	return o.ResponseWriter.Write(p)
}

func (o *overTime) FlushError() error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
	return o.rc.Flush()
}

func (o *overTime) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// liftReadDeadline lifts the read timeout's deadline once a request has
// arrived whole: at once for a request without a body, when the handler
// reads the body to its end otherwise. net/http cancels a request's
// context when a read deadline passes, so without this a handler could
// not run longer than the read timeout.
func liftReadDeadline(next http.Handler, writeTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		lift := func() { _ = rc.SetReadDeadline(time.Time{}) }
		if r.Body == nil || r.Body == http.NoBody {
			lift()
		} else {
			r.Body = &liftOnEOF{ReadCloser: r.Body, lift: lift}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), writeTimeoutKey{}, writeTimeout)))
	})
}

// liftOnEOF calls lift when its body has been read to its end.
type liftOnEOF struct {
	io.ReadCloser
	lift func()
	once sync.Once
}

func (b *liftOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.lift)
	}
	return n, err
}
