package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"go.yaml.in/yaml/v3"
)

// openAPIYAML is the API's contract, written by hand: see openapi.yaml.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPI returns the OpenAPI document of the API as JSON: openapi.yaml
// with its anchors expanded and its x-defs (the YAML's shared response
// sets) left out.
var OpenAPI = sync.OnceValue(func() []byte {
	doc, err := yamlToJSON(openAPIYAML)
	if err != nil {
		panic(fmt.Sprintf("openapi.yaml: %v", err)) // a test catches it first
	}
	return doc
})

func yamlToJSON(src []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	delete(doc, "x-defs")
	return json.Marshal(jsonValue(doc))
}

// jsonValue turns what the YAML decoder made into values encoding/json
// takes: mappings with keys other than strings (an unquoted 200) get
// their keys as strings.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonValue(e)
		}
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = jsonValue(e)
		}
	}
	return v
}

// openapi serves GET /openapi.json.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(OpenAPI())
}
