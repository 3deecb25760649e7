package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBodyAdmission(t *testing.T) {
	up := newFakeUpstream(t, okJSON(chatOK))
	g, srv, logs := serveTestGateway(t, pipelineConfig(up.URL, `"maxInFlightBodyRequests": 1,`), nil, nil)

	// The first request holds the only slot while its body trickles in.
	// Its own client: an idle connection the shared default transport
	// kept from an earlier test's server on a reused port would fail a
	// POST that cannot be retried.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	pr, pw := io.Pipe()
	first := make(chan int, 1)
	go func() {
		defer func() { _ = recover() }()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", pr)
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		resp, err := client.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	_, _ = pw.Write([]byte(`{"model":"m1",`))
	// Wait until the gateway is inside the first body read: its slot is
	// taken (bounded wait; the first request's own answer ends it early).
	deadline := time.Now().Add(10 * time.Second)
	for g.admission.inUse.Load() == 0 {
		select {
		case code := <-first:
			t.Fatalf("the first request ended (%d) before its body was sent; logs:\n%s", code, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first request never took the slot; logs:\n%s", logs)
		}
		time.Sleep(2 * time.Millisecond)
	}
	status, hdr, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, chatReq)
	if status != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, `"code":"capacity"`) {
		t.Fatalf("second request: status %d Retry-After %q body %s; want an immediate 503 with Retry-After", status, hdr.Get("Retry-After"), body)
	}
	_, _ = pw.Write([]byte(`"messages":[]}`))
	_ = pw.Close()
	if got := <-first; got != 200 {
		t.Fatalf("first request status = %d, want 200; logs:\n%s", got, logs)
	}
	// The slot is released after the body step: requests flow again.
	if status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
		t.Fatalf("after release: status %d body %s", status, body)
	}
}

func TestBodyAdmissionNotHeldDuringUpstreamCall(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if body, _ := io.ReadAll(r.Body); strings.Contains(string(body), "slow") {
			close(arrived)
			<-release
		}
		okJSON(chatOK)(w, r)
	})
	srv, _, _ := pipelineGateway(t, up.URL, `"maxInFlightBodyRequests": 1,`)
	done := make(chan int, 1)
	go func() {
		slow := `{"model":"m1","messages":[{"role":"user","content":"slow"}]}`
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(slow))
		req.Header.Set("Authorization", "Bearer "+testAliceKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow request never reached the upstream")
	}
	// The slow request is now waiting on its upstream, not on a body.
	if status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, chatReq); status != 200 {
		t.Fatalf("status %d body %s: the slot must be free during the upstream call", status, body)
	}
	close(release)
	if got := <-done; got != 200 {
		t.Fatalf("slow request status %d", got)
	}
}

func TestBodyAdmissionConfig(t *testing.T) {
	if _, err := newGatewayFromConfig(t, `{"maxInFlightBodyRequests": -1, "providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}}`); err == nil || !strings.Contains(err.Error(), "maxInFlightBodyRequests: -1") {
		t.Fatalf("err = %v", err)
	}
	g, err := newGatewayFromConfig(t, `{"maxInFlightBodyRequests": 20000, "providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}}`)
	if err != nil || g.admission.max != maxBodySlots {
		t.Fatalf("clamp: err %v", err)
	}
	g, err = newGatewayFromConfig(t, `{"providers": {"p": {"type": "openai", "baseUrl": "http://127.0.0.1:1"}}}`)
	if err != nil || g.admission.max < 64 {
		t.Fatalf("self-tuned: err %v", err)
	}
}

func TestBodyCaps(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{}`))
	srv, _, _ := pipelineGateway(t, up.URL, "")
	big := func(n int) string {
		return `{"model":"m1","prompt":"` + strings.Repeat("a", n) + `"}`
	}
	cases := []struct {
		path    string
		size    int
		chunked bool
		want    int
	}{
		{"/v1/chat/completions", 4<<20 + 1, false, 413},
		{"/v1/chat/completions", 4<<20 + 1, true, 413},
		{"/v1/embeddings", 4<<20 + 1, true, 413},
		{"/v1/images/generations", 10<<20 + 1, false, 413},
		{"/v1/images/generations", 10<<20 + 1, true, 413},
		{"/v1/audio/speech", 10<<20 + 1, true, 413},
		{"/v1/images/generations", 5 << 20, true, 200},
	}
	for _, tc := range cases {
		resp, body := send(t, srv.URL, testRequest{method: "POST", path: tc.path, headers: bearer(testAliceKey), body: big(tc.size), chunked: tc.chunked})
		if resp.StatusCode != tc.want {
			t.Errorf("%s %d bytes chunked=%v: status %d, want %d; %.200s", tc.path, tc.size, tc.chunked, resp.StatusCode, tc.want, body)
		}
		if tc.want == 413 && !strings.Contains(body, "request_too_large") {
			t.Errorf("%s: body %.200s", tc.path, body)
		}
	}
}

func TestReasoningModelsGetMaxCompletionTokens(t *testing.T) {
	cases := []struct {
		model, body, want string
	}{
		{"o3-mini", `{"model":"o3-mini","max_tokens":100,"messages":[]}`, `{"model":"o3-mini","max_completion_tokens":100,"messages":[]}`},
		{"o3-mini", `{"max_tokens": 5 ,"model":"mock/o3-mini"}`, `{"max_completion_tokens": 5 ,"model":"o3-mini"}`},
		{"m1", `{"model":"m1","max_tokens":100}`, `{"model":"m1","max_tokens":100}`},
		{"o3-mini", `{"model":"o3-mini","max_completion_tokens":7}`, `{"model":"o3-mini","max_completion_tokens":7}`},
	}
	for _, tc := range cases {
		up := newFakeUpstream(t, okJSON(chatOK))
		srv, _, _ := pipelineGateway(t, up.URL, "")
		status, _, body := do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, tc.body)
		if status != 200 {
			t.Fatalf("%s: status %d %s", tc.body, status, body)
		}
		if got := string(up.last(t).body); got != tc.want {
			t.Errorf("upstream body = %s, want %s", got, tc.want)
		}
	}
	// Both fields: the newer one wins and the legacy one is dropped.
	up := newFakeUpstream(t, okJSON(chatOK))
	srv, _, _ := pipelineGateway(t, up.URL, "")
	do(t, "POST", srv.URL+"/v1/chat/completions", testAliceKey, `{"model":"o3-mini","max_tokens":1,"max_completion_tokens":2,"n":12345678901234567890}`)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(up.last(t).body, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["max_tokens"]; ok || string(m["max_completion_tokens"]) != "2" || string(m["n"]) != "12345678901234567890" {
		t.Fatalf("upstream body %s", up.last(t).body)
	}
}

func TestIsReasoningModel(t *testing.T) {
	yes := []string{"o1", "o1-mini", "o3", "o3-mini-2025-01-31", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5.1", "openai/o3", "GPT-5"}
	no := []string{"gpt-4o", "gpt-4.1", "o10", "gpt-50", "claude-3-opus", "omni", ""}
	for _, m := range yes {
		if !isReasoningModel(m) {
			t.Errorf("%q should be a reasoning model", m)
		}
	}
	for _, m := range no {
		if isReasoningModel(m) {
			t.Errorf("%q should not be a reasoning model", m)
		}
	}
}

func TestMediaRoutesOpenAI(t *testing.T) {
	audio := bytes.Repeat([]byte{0, 1, 2, 0xff}, 50000)
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/images/generations":
			okJSON(`{"created":1,"data":[{"b64_json":"aGk="}]}`)(w, r)
		case "/v1/audio/speech":
			w.Header().Set("Content-Type", "audio/mpeg")
			w.Header().Set("Set-Cookie", "upstream=secret")
			_, _ = w.Write(audio[:1000])
			w.(http.Flusher).Flush()
			_, _ = w.Write(audio[1000:])
		default:
			http.NotFound(w, r)
		}
	})
	srv, ul, _ := pipelineGateway(t, up.URL, `"passthroughUnknown": true,`)

	status, _, body := do(t, "POST", srv.URL+"/v1/images/generations", testAliceKey, `{"model":"mock/dall-e-3","prompt":"a cat"}`)
	if status != 200 || body != `{"created":1,"data":[{"b64_json":"aGk="}]}` {
		t.Fatalf("images: %d %s", status, body)
	}
	if got := string(up.last(t).body); got != `{"model":"dall-e-3","prompt":"a cat"}` {
		t.Fatalf("images upstream body %s", got)
	}

	status, hdr, body := do(t, "POST", srv.URL+"/v1/audio/speech", testAliceKey, `{"model":"tts-1","input":"hello","voice":"alloy"}`)
	if status != 200 || hdr.Get("Content-Type") != "audio/mpeg" || body != string(audio) {
		t.Fatalf("speech: status %d type %q len %d", status, hdr.Get("Content-Type"), len(body))
	}
	if hdr.Get("Set-Cookie") != "" {
		t.Fatal("an upstream cookie reached the client")
	}
	recs := ul.waitFor(t, 2)
	for i := 0; i < len(recs); i++ {
		if recs[i].usage.PromptTokens != 0 || recs[i].usage.CompletionTokens != 0 {
			t.Fatalf("media usage must count no tokens: %+v", recs[i])
		}
	}
	if recs[0].route != "images" || recs[1].route != "audio/speech" {
		t.Fatalf("routes %q %q", recs[0].route, recs[1].route)
	}
}

func TestMediaRoutesUnsupportedProviders(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{}`))
	cfg := `{"passthroughUnknown": true,
  "providers": {
    "ant": {"type": "anthropic", "baseUrl": "` + up.URL + `", "apiKey": "k1", "models": ["claude-x"]},
    "gem": {"type": "gemini", "baseUrl": "` + up.URL + `", "apiKey": "k2", "models": ["gemini-x"]}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "` + testAliceKey + `"}]}}`
	srv, _, _ := serveWithUsage(t, cfg)
	cases := []struct{ path, model string }{
		{"/v1/images/generations", "claude-x"},
		{"/v1/audio/speech", "claude-x"},
		{"/v1/audio/speech", "gemini-x"},
		{"/v1/embeddings", "claude-x"},
	}
	for _, tc := range cases {
		status, _, body := do(t, "POST", srv.URL+tc.path, testAliceKey, `{"model":"`+tc.model+`","input":"x","prompt":"x"}`)
		if status != 501 || !strings.Contains(body, "provider_not_supported") || !strings.Contains(body, tc.path) {
			t.Errorf("%s %s: %d %s", tc.path, tc.model, status, body)
		}
	}
	if up.count() != 0 {
		t.Fatalf("upstream saw %d requests", up.count())
	}
}

func TestUnifiedUsageRecords(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11}}\n\n" +
		"data: [DONE]\n\n"
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.Header.Get("Accept"), "stream"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
		case strings.Contains(r.Header.Get("Accept"), "nousage"):
			okJSON(`{"choices":[]}`)(w, r)
		default:
			okJSON(chatOK)(w, r)
		}
	})
	srv, ul, _ := pipelineGateway(t, up.URL, "")
	send(t, srv.URL, testRequest{method: "POST", path: "/v1/chat/completions", headers: map[string]string{"Authorization": "Bearer " + testAliceKey, "Accept": "text/event-stream"}, body: `{"model":"m1","stream":true}`})
	recs := ul.waitFor(t, 1)
	if u := recs[0].usage; u.PromptTokens != 9 || u.CompletionTokens != 2 || u.Estimated || recs[0].user != "alice" || recs[0].model != "m1" {
		t.Fatalf("stream usage %+v", recs[0])
	}
	reqBody := `{"model":"m1","messages":[{"role":"user","content":"0123456789"}]}`
	send(t, srv.URL, testRequest{method: "POST", path: "/v1/chat/completions", headers: map[string]string{"Authorization": "Bearer " + testAliceKey, "Accept": "application/nousage"}, body: reqBody})
	recs = ul.waitFor(t, 2)
	if u := recs[1].usage; !u.Estimated || u.PromptTokens != int64((len(reqBody)+3)/4) {
		t.Fatalf("estimated usage %+v, want ceil(%d/4)", u, len(reqBody))
	}
}

func TestPassthroughUsageSniffing(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/messages":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":30}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		case "/v1/chat/completions":
			okJSON(chatOK)(w, r)
		default:
			okJSON(`{"object":"list"}`)(w, r)
		}
	})
	srv, ul, _ := pipelineGateway(t, up.URL, "")
	resp, body := send(t, srv.URL, testRequest{method: "POST", path: "/mock/v1/chat/completions", headers: bearer(testAliceKey), body: chatReq})
	if resp.StatusCode != 200 || body != chatOK {
		t.Fatalf("passthrough changed the body: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, srv.URL, testRequest{method: "POST", path: "/mock/v1/messages", headers: bearer(testAliceKey), body: `{"x":1}`})
	if resp.StatusCode != 200 || !strings.HasSuffix(body, "data: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("stream: %d %q", resp.StatusCode, body)
	}
	nousage := `{"input":"` + strings.Repeat("z", 40) + `"}`
	send(t, srv.URL, testRequest{method: "POST", path: "/mock/v1/other", headers: bearer(testAliceKey), body: nousage})
	recs := ul.waitFor(t, 3)
	if u := recs[0].usage; u.PromptTokens != 11 || u.CompletionTokens != 7 || recs[0].route != "passthrough" {
		t.Fatalf("json usage %+v", recs[0])
	}
	if u := recs[1].usage; u.PromptTokens != 10 || u.CompletionTokens != 30 || u.Estimated {
		t.Fatalf("sse usage %+v", u)
	}
	if u := recs[2].usage; !u.Estimated || u.PromptTokens != int64((len(nousage)+3)/4) {
		t.Fatalf("estimate %+v for %d request bytes", u, len(nousage))
	}
}

func transcriptionBody(boundary string, models ...string) string {
	var b strings.Builder
	b.WriteString("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF\x00\x01\r\n--not-a-boundary\xff\r\n")
	for i := 0; i < len(models); i++ {
		b.WriteString("--" + boundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n" + models[i] + "\r\n")
	}
	b.WriteString("--" + boundary + "\r\nContent-Disposition: form-data; name=\"language\"\r\n\r\nen\r\n--" + boundary + "--\r\n")
	return b.String()
}

func TestTranscriptions(t *testing.T) {
	up := newFakeUpstream(t, okJSON(`{"text":"hello"}`))
	srv, ul, _ := pipelineGateway(t, up.URL, `"passthroughUnknown": true,`)
	post := func(body, contentType string) (int, string) {
		resp, data := send(t, srv.URL, testRequest{method: "POST", path: "/v1/audio/transcriptions", body: body,
			headers: map[string]string{"Authorization": "Bearer " + testAliceKey, "Content-Type": contentType}})
		return resp.StatusCode, data
	}
	ct := "multipart/form-data; boundary=XyZ"

	// The model is already the upstream id: replayed byte-for-byte.
	orig := transcriptionBody("XyZ", "whisper-1")
	if status, body := post(orig, ct); status != 200 || body != `{"text":"hello"}` {
		t.Fatalf("status %d body %s", status, body)
	}
	last := up.last(t)
	if string(last.body) != orig || last.header.Get("Content-Type") != ct {
		t.Fatalf("the unchanged body was not replayed verbatim")
	}
	if last.header.Get("Authorization") != "Bearer "+testProviderKey {
		t.Fatal("provider key not injected")
	}

	// A provider-prefixed id: rebuilt with only the model part rewritten.
	if status, body := post(transcriptionBody("XyZ", "mock/whisper-1"), ct); status != 200 {
		t.Fatalf("prefixed: status %d body %s", status, body)
	}
	last = up.last(t)
	model, e := transcriptionModel(last.header.Get("Content-Type"), last.body)
	if e != nil || model != "whisper-1" {
		t.Fatalf("upstream model = %q (%v), want whisper-1", model, e)
	}
	if !bytes.Contains(last.body, []byte("RIFF\x00\x01\r\n--not-a-boundary\xff")) || !bytes.Contains(last.body, []byte("\r\n\r\nen\r\n")) {
		t.Fatalf("other parts not copied verbatim: %q", last.body)
	}
	calls := up.count()

	cases := []struct {
		name, body, contentType string
		status                  int
		code                    string
	}{
		{"two model fields", transcriptionBody("XyZ", "whisper-1", "whisper-1"), ct, 400, "duplicate_model"},
		{"no model field", transcriptionBody("XyZ"), ct, 400, "missing_model"},
		{"not multipart", `{"model":"whisper-1"}`, "application/json", 400, "invalid_content_type"},
		{"unknown model", transcriptionBody("XyZ", "nope"), ct, 404, "model_not_found"},
		{"over 10 MiB", transcriptionBody("XyZ", "whisper-1") + strings.Repeat("x", 10<<20), ct, 413, "request_too_large"},
	}
	for _, tc := range cases {
		status, body := post(tc.body, tc.contentType)
		if status != tc.status || !strings.Contains(body, tc.code) {
			t.Errorf("%s: status %d body %.200s; want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	if up.count() != calls {
		t.Fatalf("refused requests reached the upstream")
	}
	recs := ul.waitFor(t, 2)
	if recs[0].route != "audio/transcriptions" || recs[0].usage.PromptTokens != 0 {
		t.Fatalf("record %+v", recs[0])
	}
}

func TestPassthroughResponseOverCap(t *testing.T) {
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/declared" {
			w.Header().Set("Content-Length", "33554433")
			w.WriteHeader(200)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		for i := 0; i < 33; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	srv, _, _ := pipelineGateway(t, up.URL, "")
	resp, body := send(t, srv.URL, testRequest{method: "GET", path: "/mock/declared", headers: bearer(testAliceKey)})
	expectEnvelope(t, resp, body, 502, "server_error", "upstream_response_too_large")

	req, _ := http.NewRequest("GET", srv.URL+"/mock/chunked", nil)
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	n, err := io.Copy(io.Discard, r2.Body)
	if err == nil {
		t.Fatalf("a response cut at the cap read as complete (%d bytes)", n)
	}
	if n > maxUpstreamResponseBytes {
		t.Fatalf("client got %d bytes, over the cap", n)
	}
}

// Native passthrough strips the client's Accept-Encoding: the client gets
// identity-encoded bytes whatever it asked for (the transport negotiates
// and decodes gzip with the upstream on its own).
func TestPassthroughIdentityEncoding(t *testing.T) {
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept-Encoding"), "br") {
			w.WriteHeader(400)
			return
		}
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, `{"plain":true}`)
			_ = zw.Close()
			return
		}
		_, _ = io.WriteString(w, `{"plain":true}`)
	})
	srv, _, _ := pipelineGateway(t, up.URL, "")
	req, _ := http.NewRequest("GET", srv.URL+"/mock/v1/anything", nil)
	req.Header.Set("Authorization", "Bearer "+testAliceKey)
	req.Header.Set("Accept-Encoding", "br, gzip")
	// A raw transport: no transparent decompression on the client side.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || string(body) != `{"plain":true}` {
		t.Fatalf("status %d encoding %q body %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
	}
	if ae := up.last(t).header.Get("Accept-Encoding"); strings.Contains(ae, "br") {
		t.Fatalf("client Accept-Encoding reached the upstream: %q", ae)
	}
}
