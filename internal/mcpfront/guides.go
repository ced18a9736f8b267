package mcpfront

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	outboxauth "github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
)

// The guides are read-only resources: the bootstrap guide, and the guide
// of each source in the caller's catalog, as GET …/actions/guide serves
// them.
const (
	bootstrapURI = "outboxd://guide"
	guidePrefix  = "outboxd://guides/"
)

// listGuides is resources/list: the bootstrap guide and one guide per
// source the caller may use.
func (s *Server) listGuides(ctx context.Context, c *outboxauth.Claims) (*mcp.ListResourcesResult, error) {
	listing, err := s.catalog.Available(ctx, caller(c))
	if err != nil {
		return nil, err
	}
	out := &mcp.ListResourcesResult{Cacheable: perCaller, Resources: []*mcp.Resource{{
		URI: bootstrapURI, Name: "guide", Title: "How to act through outboxd", MIMEType: "text/markdown",
	}}}
	for _, src := range listing.Sources {
		// A source without a display name (the demo's) goes by its id,
		// as its tools' titles do.
		name := cmp.Or(src.Name, src.Source)
		out.Resources = append(out.Resources, &mcp.Resource{
			URI: guidePrefix + src.Source, Name: src.Source, Title: "Guide: " + name, MIMEType: "text/markdown",
			Description: "Every action of " + name + " with its mode for you, its params and an example.",
		})
	}
	return out, nil
}

// readGuide is resources/read of a guide.
func (s *Server) readGuide(ctx context.Context, c *outboxauth.Claims, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	var text string
	switch source, ok := strings.CutPrefix(p.URI, guidePrefix); {
	case p.URI == bootstrapURI:
		text = catalog.BootstrapGuide
	case ok && source != "":
		guide, err := s.catalog.Guide(ctx, caller(c), source)
		switch {
		case errors.Is(err, errs.NotFound):
			return nil, resourceNotFound(p.URI)
		case errors.Is(err, errs.SourceUnavailable):
			// Down for now (a connector's server unreachable), as the
			// REST guide says (503): not a resource that does not exist.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		case err != nil:
			return nil, err // logged, and answered as an internal error (own)
		}
		text = guide
	default:
		return nil, resourceNotFound(p.URI)
	}
	return &mcp.ReadResourceResult{Cacheable: perCaller, Contents: []*mcp.ResourceContents{{URI: p.URI, MIMEType: "text/markdown", Text: text}}}, nil
}

// resourceNotFound is the SDK's resource not found error for uri, its data
// encoded as JSON: the SDK's own (mcp.ResourceNotFoundError) quotes the URI
// as Go does, so a URI with a NUL, another control character or bytes that
// are not UTF-8 gave data that is not JSON ("\x00"), which the SDK could
// not send; the session's connection then broke, the request was answered
// with an empty body, and every later request of the session too.
func resourceNotFound(uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Resource not found", Data: data}
}

// perCaller is how long, and by whom, a client may keep a list or a guide
// (2026-07-28's ttlMs and cacheScope, which the SDK's own handlers fill in
// but these bypass): read again each time, as the caller's catalog
// changes, and never served to another caller, whose token may see other
// sources and modes. An empty cacheScope is not a value the protocol has.
var perCaller = mcp.Cacheable{TTLMs: 0, CacheScope: "private"}

// caller is the catalog's view of the token.
func caller(c *outboxauth.Claims) *catalog.Caller {
	return &catalog.Caller{OrganizationID: c.Org, AutomationID: c.AutomationID, UserID: c.UserID, Sources: c.Sources}
}
