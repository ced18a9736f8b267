package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"github.com/outboxd/outboxd/internal/api"
)

// Contract checks exchanges with the API against its OpenAPI document:
// every request a Bundle sends and every answer it gets (Do, Open) and
// every event a stream delivers (SSE.Next) go through it, so each
// end-to-end test also tests the document.
type Contract struct {
	validator validator.Validator
	schemas   schema_validation.SchemaValidator
	// events maps an event-stream event name to its data schema
	// (x-outboxd-events of the text/event-stream answers).
	events map[string]*base.Schema
	// errorSchema is the error shape, for answers of unknown routes.
	errorSchema *base.Schema
	// schemaMu serializes validateSchema: libopenapi renders a schema for
	// each validation and writes to the shared model as it does, so two
	// parallel tests validating through the same $ref race (-race).
	schemaMu sync.Mutex
}

// validateSchema validates data against one schema of the document.
func (c *Contract) validateSchema(s *base.Schema, data []byte) (bool, []*valerrors.ValidationError) {
	c.schemaMu.Lock()
	defer c.schemaMu.Unlock()
	return c.schemas.ValidateSchemaBytes(s, data)
}

// DefaultContract is the contract of the API this binary serves
// (api.OpenAPI), built once.
var DefaultContract = sync.OnceValues(func() (*Contract, error) { return NewContract(api.OpenAPI()) })

// NewContract builds the checker of an OpenAPI 3.1 document.
func NewContract(doc []byte) (*Contract, error) {
	parsed, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("parsing the OpenAPI document: %w", err)
	}
	model, err := parsed.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI model: %w", err)
	}
	v, errs := validator.NewValidator(parsed)
	if len(errs) > 0 {
		return nil, fmt.Errorf("building the validator: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %s", joinErrors(verrs))
	}
	c := &Contract{validator: v, schemas: schema_validation.NewSchemaValidator(), events: map[string]*base.Schema{}}
	schema := func(ref string) (*base.Schema, error) {
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		proxy := model.Model.Components.Schemas.GetOrZero(name)
		if !ok || proxy == nil {
			return nil, fmt.Errorf("no schema %s", ref)
		}
		return proxy.Schema(), nil
	}
	if c.errorSchema, err = schema("#/components/schemas/Error"); err != nil {
		return nil, err
	}
	// The event schemas, read from the JSON itself: the model keeps
	// extensions as raw YAML.
	var raw struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, err
	}
	for _, item := range raw.Paths {
		for key, rawOp := range item {
			if key == "parameters" {
				continue
			}
			var op struct {
				Responses map[string]struct {
					Content map[string]struct {
						Events map[string]struct {
							Ref string `json:"$ref"`
						} `json:"x-outboxd-events"`
					} `json:"content"`
				} `json:"responses"`
			}
			if err := json.Unmarshal(rawOp, &op); err != nil {
				return nil, err
			}
			for _, resp := range op.Responses {
				for _, media := range resp.Content {
					for name, ev := range media.Events {
						if c.events[name], err = schema(ev.Ref); err != nil {
							return nil, fmt.Errorf("event %s: %w", name, err)
						}
					}
				}
			}
		}
	}
	return c, nil
}

// Check validates one exchange: the request as sent, with its body, and
// the answer with its body (empty for an event stream, whose events
// CheckEvent takes). The document must have the route, the request must
// match it unless the server refused it (4xx), and the answer's status,
// headers and body must be documented for the route. A route the document
// does not have must be answered 404 or 405 in the API's error shape.
func (c *Contract) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	vreq := req.Clone(context.Background())
	head := req.Method == http.MethodHead
	if head {
		vreq.Method = http.MethodGet // net/http serves HEAD with the GET route
	}
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	_, reqErrs := c.validator.ValidateHttpRequest(vreq)
	for _, e := range reqErrs {
		if e.IsPathMissingError() || e.IsOperationMissingError() {
			if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
				return fmt.Errorf("%s %s is not in the document, but the server answered %d", req.Method, req.URL.Path, resp.StatusCode)
			}
			if head {
				return nil
			}
			if ok, errs := c.validateSchema(c.errorSchema, respBody); !ok {
				return fmt.Errorf("the %d answer of an unknown route is not an API error: %s", resp.StatusCode, joinErrors(errs))
			}
			return nil
		}
	}
	if head {
		return nil // no body to check; the route exists
	}
	var problems []string
	if len(reqErrs) > 0 && resp.StatusCode < 400 {
		problems = append(problems, fmt.Sprintf("the server answered %d to a request the document refuses: %s", resp.StatusCode, joinErrors(reqErrs)))
	}
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	vresp := *resp
	vresp.Request = vreq
	vresp.Body = io.NopCloser(bytes.NewReader(respBody))
	if _, respErrs := c.validator.ValidateHttpResponse(vreq, &vresp); len(respErrs) > 0 {
		problems = append(problems, fmt.Sprintf("the %d answer does not match the document: %s", resp.StatusCode, joinErrors(respErrs)))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

var eventID = regexp.MustCompile(`^[0-9]+$`)

// CheckEvent validates one event-stream message: a documented event name,
// a numeric id, and data matching the event's schema.
func (c *Contract) CheckEvent(id, event string, data []byte) error {
	schema, ok := c.events[event]
	if !ok {
		return fmt.Errorf("event %q is not documented (x-outboxd-events)", event)
	}
	if !eventID.MatchString(id) {
		return fmt.Errorf("event %s has id %q, not an event id", event, id)
	}
	if ok, errs := c.validateSchema(schema, data); !ok {
		return fmt.Errorf("event %s: data does not match the document: %s", event, joinErrors(errs))
	}
	return nil
}

func joinErrors(errs []*valerrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(" (" + e.Reason + ")")
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, " [%s]", f.Error())
		}
	}
	return b.String()
}
