package gateway

import (
	"net/http"
	"strings"
	"testing"
)

func TestSmokeChat(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion"}`))
	})
	srv, logs := newTestGateway(t, `{"providers":{"mock":{"type":"openai","baseUrl":"`+up.URL+`","apiKey":"sk-prov","models":["m1"]}},
	"groups":{"g":{}},"users":{"inline":[{"name":"alice","group":"g","apiKey":"sk-alice"}]}}`, nil)
	status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", "sk-alice", `{"model":"mock/m1","n":12345678901234567890,"x":{"y":1}}`)
	if status != 200 || !strings.Contains(body, "chat.completion") {
		t.Fatalf("status %d body %s logs %s", status, body, logs)
	}
	got := up.last(t)
	if string(got.body) != `{"model":"m1","n":12345678901234567890,"x":{"y":1}}` {
		t.Fatalf("forwarded body %s", got.body)
	}
	if got.header.Get("Authorization") != "Bearer sk-prov" {
		t.Fatalf("auth %q", got.header.Get("Authorization"))
	}
}
