// Package httpserver is the HTTP server every outboxd role serves on: the
// timeouts that bound a connection (read_header_timeout, read_timeout,
// write_timeout, idle_timeout), the cap on connections a process holds
// (max_conns) and the per-address cap on requests without a valid token.
//
// Two kinds of request outlive the write timeout on purpose, each with its
// own bound: an event stream bounds every write instead (its handler sets a
// write deadline per write), and a handler that waits for a result extends
// its write deadline by the wait with [ExtendWrite]. The read timeout bounds
// only the arrival of a request (header and body): once a handler has read
// the body to its end, the read deadline is lifted, so a long-running
// handler's context is cancelled when its client goes away, not when the
// read timeout passes.
//
// At max_conns a new connection takes the place of the oldest connection
// that is idle between requests or has not sent a whole request header yet;
// when every connection is serving a request, new connections wait in the
// kernel's accept queue until one ends. Health probes therefore keep being
// answered while slow or idle clients hold every slot, and a flood of
// sockets queues in the kernel instead of taking the process's descriptors.
package httpserver
