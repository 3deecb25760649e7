package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/llmgateway/llmgateway/gateway"
)

// Example mounts the gateway inside another Go proxy: the gateway answers
// its own routes (/v1/...) and hands every other path to the host's own
// handler, because passthroughUnknown is set.
func Example() {
	// An OpenAI-compatible upstream (a local model server, say).
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`)
	}))
	defer upstream.Close()

	cfg, err := gateway.DecodeConfigJSON([]byte(`{
		"providers": {"local": {"type": "openai", "baseUrl": "` + upstream.URL + `", "models": ["llama-3"]}},
		"groups": {"default": {"providers": []}},
		"users": {"inline": [{"name": "alice", "group": "default", "apiKey": "sk-alice"}]},
		"passthroughUnknown": true
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}

	// The host proxy's own routes.
	host := http.NewServeMux()
	host.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "host ok")
	})

	gw, err := gateway.New(host, cfg, gateway.Options{Name: "embedded", LogOutput: io.Discard})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Close()
	srv := httptest.NewServer(gw)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"llama-3","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer sk-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"content":"hello"`))

	resp, err = http.Get(srv.URL + "/status")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 true
	// 200 host ok
}
