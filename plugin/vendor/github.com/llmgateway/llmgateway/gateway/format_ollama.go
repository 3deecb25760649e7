package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
	"github.com/llmgateway/llmgateway/gateway/internal/sse"
	"github.com/llmgateway/llmgateway/gateway/internal/translate"
)

// The Ollama API (/api/chat, /api/generate, /api/embed, /api/embeddings,
// and the model and server metadata routes) on every provider type,
// served through the hub: requests translated to OpenAI chat or
// embeddings, answers translated back (translate.HubFromOllama*,
// OllamaFromHub*, NewOllamaOutStream).

// ollamaFormat is Ollama's wire shape: errors {"error":"…"}, streams of
// NDJSON objects (one per line, application/x-ndjson) ending with the
// translator's done:true line, a mid-stream error as a final
// {"error":"…"} line. "stream" defaults to true.
var ollamaFormat = &wireFormat{
	name:       "ollama",
	writeError: writeOllamaError,
	frame: func(dst []byte, p translate.Payload) []byte {
		dst = append(dst, p.Data...)
		return append(dst, '\n')
	},
	streamEndName: `"done":true`,
	streamError: func(dst []byte, e *apiError) []byte {
		dst = append(dst, ollamaErrorJSON(e)...)
		return append(dst, '\n')
	},
	isStreamEnd:       func(_ sse.Event) bool { return false },
	readRequest:       readOllamaRequest,
	streamContentType: "application/x-ndjson",
}

// ollamaErrorJSON is e as Ollama's error object.
func ollamaErrorJSON(e *apiError) []byte {
	data, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{e.Message})
	return data
}

func writeOllamaError(w http.ResponseWriter, e *apiError) {
	writeErrorBody(w, e, ollamaErrorJSON(e))
}

// readOllamaRequest reads an Ollama request body: the model, "stream"
// (true unless the body says false), and options.num_predict as the
// output cap (for the reservation). Keys are matched exactly, as the
// translators read them (a struct decode would also take "Stream").
func readOllamaRequest(body []byte) (*jsonRequest, *apiError) {
	req, e := parseJSONRequest(body)
	if e != nil {
		return nil, e
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	req.stream = string(top["stream"]) != "false"
	var options map[string]json.RawMessage
	_ = json.Unmarshal(top["options"], &options)
	req.maxOutputTokens = parseTokenCap(options["num_predict"])
	return req, nil
}

// ollamaChatToHub is /api/chat's conversion; ollamaGenerateToHub
// /api/generate's.
func ollamaChatToHub(c *call) (*hubConversion, *apiError) {
	return ollamaToHub(c, translate.HubFromOllamaChat)
}

func ollamaGenerateToHub(c *call) (*hubConversion, *apiError) {
	return ollamaToHub(c, translate.HubFromOllamaGenerate)
}

func ollamaToHub(c *call, toHub func([]byte) ([]byte, translate.OllamaInbound, *apiError)) (*hubConversion, *apiError) {
	body, info, e := toHub(c.req.raw)
	if e != nil {
		return nil, e
	}
	hub, e := parseJSONRequest(body)
	if e != nil {
		return nil, e
	}
	start := c.rec.start
	return &hubConversion{
		hub: hub,
		decode: func(hub []byte, tc translate.Context) ([]byte, translate.Usage, *apiError) {
			now := time.Now()
			return translate.OllamaFromHubResponse(hub, info, translate.OllamaTimes{Start: start, FirstToken: now, End: now})
		},
		stream: func(inner translate.StreamTranslator, tc translate.Context) translate.StreamTranslator {
			return translate.NewOllamaOutStream(inner, info, time.Now)
		},
	}, nil
}

// ollamaEmbedToHub is /api/embed's conversion; ollamaEmbeddingsToHub
// the legacy /api/embeddings'.
func ollamaEmbedToHub(c *call) (*hubConversion, *apiError) { return ollamaEmbedConversion(c, false) }

func ollamaEmbeddingsToHub(c *call) (*hubConversion, *apiError) {
	return ollamaEmbedConversion(c, true)
}

func ollamaEmbedConversion(c *call, legacy bool) (*hubConversion, *apiError) {
	body, model, e := translate.HubFromOllamaEmbed(c.req.raw, legacy)
	if e != nil {
		return nil, e
	}
	hub, e := parseJSONRequest(body)
	if e != nil {
		return nil, e
	}
	start := c.rec.start
	return &hubConversion{
		hub: hub,
		decode: func(hub []byte, tc translate.Context) ([]byte, translate.Usage, *apiError) {
			now := time.Now()
			return translate.OllamaFromHubEmbeddings(hub, legacy, model, translate.OllamaTimes{Start: start, FirstToken: now, End: now})
		},
	}, nil
}

// embeddingsRoute is the embeddings route, whose backends the Ollama
// embedding routes go through.
var embeddingsRoute = routeTable[1]

// ollamaVersion is what GET /api/version reports: a recent Ollama
// release, so clients that check for features by version use them.
const ollamaVersion = "0.12.6"

// serveOllamaMeta answers the Ollama routes that call no model: GET
// /api/tags (the caller's models), POST /api/show (one model's
// details), GET /api/version and GET /api/ps (no model is ever loaded
// here), and GET or HEAD / ("Ollama is running", which clients probe).
// It reports whether the path was one of them.
func (g *Gateway) serveOllamaMeta(w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Path {
	case "/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return false
		}
		startTrace(w, r)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", "17")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("Ollama is running"))
		}
		return true
	case "/api/version":
		startTrace(w, r)
		writeJSON(w, http.StatusOK, map[string]string{"version": ollamaVersion})
		return true
	case "/api/ps":
		startTrace(w, r)
		writeJSON(w, http.StatusOK, map[string][]interface{}{"models": {}})
		return true
	case "/api/tags":
		g.serveOllamaTags(w, r, startTrace(w, r))
		return true
	case "/api/show":
		g.serveOllamaShow(w, r, startTrace(w, r))
		return true
	}
	return false
}

// ollamaDetails is a model's "details" object.
type ollamaDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// ollamaModel is one entry of GET /api/tags.
type ollamaModel struct {
	Name       string        `json:"name"`
	Model      string        `json:"model"`
	ModifiedAt string        `json:"modified_at"`
	Size       int64         `json:"size"`
	Digest     string        `json:"digest"`
	Details    ollamaDetails `json:"details"`
	// ContextLength is the gateway's addition: the context window when
	// model metadata knows it.
	ContextLength int64 `json:"context_length,omitempty"`
}

// ollamaDetailsOf is the details the gateway can give: the provider
// as the family.
func ollamaDetailsOf(route modelRoute) ollamaDetails {
	return ollamaDetails{Format: "api", Family: route.provider.name, Families: []string{route.provider.name}}
}

func (g *Gateway) serveOllamaTags(w http.ResponseWriter, r *http.Request, tr *requestTrace) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		ollamaFormat.writeError(w, errMethodNotAllowed(r.Method, r.URL.Path, http.MethodGet))
		return
	}
	user, e := authenticate(g, r, tr)
	if e != nil {
		ollamaFormat.writeError(w, e)
		return
	}
	modified := g.started.UTC().Format(time.RFC3339Nano)
	entries := g.models().entries()
	list := struct {
		Models []ollamaModel `json:"models"`
	}{Models: make([]ollamaModel, 0, len(entries))}
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if !user.canUseRoute(e.route) {
			continue
		}
		m := ollamaModel{Name: e.id, Model: e.id, ModifiedAt: modified, Details: ollamaDetailsOf(e.route)}
		m.ContextLength = g.models().resolveMeta(e.route).context
		list.Models = append(list.Models, m)
	}
	writeJSON(w, http.StatusOK, list)
}

// serveOllamaShow answers POST /api/show {"model"} (or the legacy
// "name"): the details, model_info with "<arch>.context_length" from
// model metadata when known, and capabilities (completion always; tools
// for chat models; embedding for the provider's embedding models cannot
// be told apart here, so they are listed as completion too).
func (g *Gateway) serveOllamaShow(w http.ResponseWriter, r *http.Request, tr *requestTrace) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		ollamaFormat.writeError(w, errMethodNotAllowed(r.Method, r.URL.Path, http.MethodPost))
		return
	}
	user, e := authenticate(g, r, tr)
	if e != nil {
		ollamaFormat.writeError(w, e)
		return
	}
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	body, _, _ := readCapped(r.Body, 64<<10)
	if json.Unmarshal(body, &req) != nil || req.Model == "" && req.Name == "" {
		ollamaFormat.writeError(w, apierr.BadRequest("invalid_request", `"model" is required`))
		return
	}
	if req.Model == "" {
		req.Model = req.Name
	}
	route, e := resolveModel(g, user, req.Model)
	if e != nil {
		ollamaFormat.writeError(w, e)
		return
	}
	info := map[string]interface{}{"general.architecture": "llmgw", "general.basename": req.Model}
	if n := g.models().resolveMeta(route).context; n > 0 {
		info["llmgw.context_length"] = n
	}
	writeJSON(w, http.StatusOK, map[string]interface{}{
		"modelfile":    "",
		"parameters":   "",
		"template":     "",
		"details":      ollamaDetailsOf(route),
		"model_info":   info,
		"capabilities": []string{"completion", "tools"},
		"modified_at":  g.started.UTC().Format(time.RFC3339Nano),
	})
}
