package api

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// loadDocument loads the server's OpenAPI document with kin-openapi and
// validates it against the OpenAPI 3.0 rules.
func loadDocument(t *testing.T, s *server) *openapi3.T {
	t.Helper()
	raw, err := json.Marshal(s.openAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("load the document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3.0: %v", err)
	}
	return doc
}

// Every JSON operation declares the schema of its success body as an
// object or array with its members (never a bare {"type":"object"}), its
// errors, and /metrics and the SSE stream their own media types.
func TestOpenAPIDocumentDeclaresEveryBody(t *testing.T) {
	r := newRig(t)
	doc := loadDocument(t, r.s)
	ops := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops++
			name := method + " " + path
			var success *openapi3.Response
			for code, ref := range op.Responses.Map() {
				if code[0] == '2' {
					success = ref.Value
				}
			}
			if success == nil {
				t.Errorf("%s: no success response", name)
				continue
			}
			switch path {
			case "/metrics":
				if success.Content.Get("text/plain") == nil {
					t.Errorf("%s: not text/plain", name)
				}
				continue
			case "/api/v1/events/stream":
				if success.Content.Get("text/event-stream") == nil {
					t.Errorf("%s: not text/event-stream", name)
				}
				continue
			}
			mt := success.Content.Get("application/json")
			if mt == nil || mt.Schema == nil {
				t.Errorf("%s: no JSON schema of the success body: give its routeDocs entry Resp (CONTRIBUTING.md, A new API route)", name)
				continue
			}
			if sch := mt.Schema.Value; len(sch.Properties) == 0 && len(sch.OneOf) == 0 && sch.AdditionalProperties.Schema == nil {
				t.Errorf("%s: the success body declares no member", name)
			}
			if _, authenticated := op.Extensions["x-role"]; authenticated {
				for _, code := range []string{"401", "403"} {
					if op.Responses.Value(code) == nil {
						t.Errorf("%s: %s undocumented", name, code)
					}
				}
			}
			if op.RequestBody != nil && op.Responses.Value("400") == nil {
				t.Errorf("%s: takes a body, 400 undocumented", name)
			}
			if strings.Contains(path, "{") && op.Responses.Value("404") == nil {
				t.Errorf("%s: has a path parameter, 404 undocumented", name)
			}
		}
	}
	if ops < 80 {
		t.Errorf("only %d operations", ops)
	}
	create := doc.Paths.Find("/api/v1/olts").Post
	for _, code := range []string{"201", "409", "422"} {
		if create.Responses.Value(code) == nil {
			t.Errorf("POST /api/v1/olts: %s undocumented", code)
		}
	}
}

// The request schemas accept the documents' own examples (creating an
// OLT by profile or by detection, a brand, a silence) and refuse an
// unknown member, as the handlers do.
func TestOpenAPIRequestSchemasAcceptTheDocsExamples(t *testing.T) {
	r := newRig(t)
	doc := loadDocument(t, r.s)
	body := func(path, method string) *openapi3.Schema {
		op := doc.Paths.Find(path).GetOperation(method)
		return op.RequestBody.Value.Content.Get("application/json").Schema.Value
	}
	for _, tc := range []struct {
		path, method, body string
		ok                 bool
	}{
		{"/api/v1/olts", http.MethodPost, `{"id":"olt-core-1","name":"Core 1","ip":"192.0.2.10","port":161,"community":"YOUR-COMMUNITY","profile":"huawei-ma5800"}`, true},
		{"/api/v1/olts", http.MethodPost, `{"id":"olt-9","name":"OLT 9","ip":"127.0.0.1","port":16101,"community":"public","brand_id":"auto"}`, true},
		{"/api/v1/olts", http.MethodPost, `{"id":"olt-9","name":"OLT 9","ip":"127.0.0.1","snmp":{"max_repetitions":20}}`, true},
		{"/api/v1/olts", http.MethodPost, `{"id":"olt-9","colour":"red"}`, false},
		{"/api/v1/olts", http.MethodPost, `{"id":"olt-9","port":"161"}`, false},
		{"/api/v1/olts/{id}", http.MethodPatch, `{"enabled":false}`, true},
		{"/api/v1/brands", http.MethodPost, brandExample, true},
		{"/api/v1/silences", http.MethodPost, `{"olt_id":"olt-a","duration":"2h","comment":"maintenance"}`, true},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.body), &v); err != nil {
			t.Fatal(err)
		}
		err := body(tc.path, tc.method).VisitJSON(v)
		if (err == nil) != tc.ok {
			t.Errorf("%s %s %s: valid=%v, want %v (%v)", tc.method, tc.path, tc.body, err == nil, tc.ok, err)
		}
	}
}

const brandExample = `{"id":"huawei","name":"Huawei","index_scheme":"pon.onu"}`

// A response schema refuses what a handler must not answer: a member it
// does not declare, a member of another type, a required member missing.
func TestOpenAPIResponseSchemasAreStrict(t *testing.T) {
	r := newRig(t)
	doc := loadDocument(t, r.s)
	sch := doc.Paths.Find("/api/v1/olts/{id}").Get.Responses.Value("200").Value.Content.Get("application/json").Schema.Value
	good, err := json.Marshal(oltDetail{oltView: oltView{ID: "olt-a", Name: "A", IP: "192.0.2.1", Port: 161, BrandID: "huawei", Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		ok     bool
	}{
		{"as encoded", func(map[string]any) {}, true},
		{"an undeclared member", func(m map[string]any) { m["community"] = "public" }, false},
		{"a number as a string", func(m map[string]any) { m["port"] = "161" }, false},
		{"a required member missing", func(m map[string]any) { delete(m, "brand_id") }, false},
		{"null where not nullable", func(m map[string]any) { m["name"] = nil }, false},
		{"null where nullable", func(m map[string]any) { m["availability"] = nil }, true},
	} {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		tc.change(m)
		if err := sch.VisitJSON(m); (err == nil) != tc.ok {
			t.Errorf("%s: valid=%v, want %v (%v)", tc.name, err == nil, tc.ok, err)
		}
	}
}

// curlRE finds a curl command of the documentation (continuation lines
// joined) that calls the API; bodyRE its -d '...' body, methodRE its -X.
var (
	curlRE   = regexp.MustCompile(`curl [^\n]*http://127\.0\.0\.1:8080(/api/[^\s'"]*)`)
	bodyRE   = regexp.MustCompile(`(?:-d|--data|--data-raw) '([^']*)'`)
	methodRE = regexp.MustCompile(`-X ([A-Z]+)`)
)

// Every curl command of README.md and docs/*.md that calls the API sends a
// request the document accepts: an operation of its path and method, its
// query parameters and its body (the create-OLT-by-profile example among
// them).
func TestOpenAPIAcceptsTheDocsCurlCommands(t *testing.T) {
	r := newRig(t)
	doc := loadDocument(t, r.s)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "README.md"))
	seen := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(raw), "\\\n", " ")
		for _, m := range curlRE.FindAllStringSubmatch(text, -1) {
			cmd, path := m[0], m[1]
			method := http.MethodGet
			var body string
			if b := bodyRE.FindStringSubmatch(cmd); b != nil {
				method, body = http.MethodPost, b[1]
			}
			if x := methodRE.FindStringSubmatch(cmd); x != nil {
				method = x[1]
			}
			req, err := http.NewRequest(method, "http://127.0.0.1:8080"+path, strings.NewReader(body))
			if err != nil {
				t.Errorf("%s: %s: %v", f, cmd, err)
				continue
			}
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			route, params, err := router.FindRoute(req)
			if err != nil {
				t.Errorf("%s: %s %s: no operation of the document: %v", f, method, path, err)
				continue
			}
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				t.Errorf("%s: %s: the document refuses it: %v", f, cmd, err)
			}
			seen++
		}
	}
	if seen < 3 {
		t.Errorf("only %d curl commands of the API found in the documentation", seen)
	}
}

type schemaInner struct {
	N int `json:"n"`
}

type schemaNode struct {
	Name string      `json:"name"`
	Next *schemaNode `json:"next"`
}

type schemaSample struct {
	schemaInner
	S      string            `json:"s"`
	Opt    string            `json:"opt,omitempty"`
	Ptr    *float64          `json:"ptr"`
	When   time.Time         `json:"when"`
	Raw    json.RawMessage   `json:"raw"`
	List   []string          `json:"list"`
	Map    map[string]int    `json:"map"`
	Quoted int64             `json:"quoted,string"`
	Skip   string            `json:"-"`
	Inner  schemaInner       `json:"inner"`
	Node   schemaNode        `json:"node"`
	hidden string            // unexported: not a member
	Any    any               `json:"any"`
	Dur    time.Duration     `json:"dur"`
	Sets   map[string][]bool `json:"sets"`
}

// The reflection describes each JSON member as encoding/json writes it.
func TestSchemaReflection(t *testing.T) {
	g := &schemaGen{}
	ref := g.response(schemaSample{})
	if ref["$ref"] != "#/components/schemas/SchemaSample" {
		t.Fatalf("a named struct is not a component: %v", ref)
	}
	s := g.components["SchemaSample"].(map[string]any)
	props := s["properties"].(map[string]any)
	prop := func(name string) map[string]any { p, _ := props[name].(map[string]any); return p }
	for _, tc := range []struct {
		name, key string
		want      any
	}{
		{"embedded member inlined", "n", "integer"},
		{"string", "s", "string"},
		{"pointer", "ptr", "number"},
		{"time", "when", "string"},
		{"slice", "list", "array"},
		{"map", "map", "object"},
		{"quoted number", "quoted", "string"},
		{"duration", "dur", "integer"},
	} {
		if got := prop(tc.key)["type"]; got != tc.want {
			t.Errorf("%s: %s type %v, want %v", tc.name, tc.key, got, tc.want)
		}
	}
	for _, key := range []string{"ptr", "list", "map", "raw", "any"} {
		if prop(key)["nullable"] != true {
			t.Errorf("%s: not nullable", key)
		}
	}
	for _, key := range []string{"s", "when", "n", "quoted"} {
		if prop(key)["nullable"] == true {
			t.Errorf("%s: nullable", key)
		}
	}
	if prop("when")["format"] != "date-time" {
		t.Errorf("time: %v", prop("when"))
	}
	for _, key := range []string{"-", "Skip", "hidden", "schemaInner"} {
		if _, ok := props[key]; ok {
			t.Errorf("%s is a member", key)
		}
	}
	req := s["required"].([]string)
	if contains(req, "opt") || !contains(req, "s") || !contains(req, "ptr") || !contains(req, "n") {
		t.Errorf("required %v: omitempty members are optional, the others required", req)
	}
	if s["additionalProperties"] != false {
		t.Error("an object allows undeclared members")
	}
	if prop("inner")["$ref"] != "#/components/schemas/SchemaInner" {
		t.Errorf("a named struct member is not a reference: %v", prop("inner"))
	}
	// A recursive type ends: the pointer to itself is inline, then any
	// value.
	node := g.components["SchemaNode"].(map[string]any)["properties"].(map[string]any)["next"].(map[string]any)
	if node["nullable"] != true {
		t.Errorf("recursive member %v", node)
	}
	// Request bodies: nothing required, everything inline.
	rs := (&schemaGen{request: true}).response(schemaSample{})
	if _, ok := rs["required"]; ok || rs["type"] != "object" {
		t.Errorf("request schema %v", rs)
	}
}
