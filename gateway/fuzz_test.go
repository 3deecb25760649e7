package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// topLevelMembers lists a JSON object's top-level keys (unescaped) and
// raw values in order; ok is false when data is not one object.
func topLevelMembers(data []byte) (keys []string, values []json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if d, isDelim := tok.(json.Delim); err != nil || !isDelim || d != '{' {
		return nil, nil, false
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys = append(keys, k)
		values = append(values, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, false
	}
	return keys, values, true
}

func FuzzParseJSONRequest(f *testing.F) {
	seeds := []string{
		`{"model":"m1"}`,
		`{ "model" : "mock/m1" , "n": 12345678901234567890 }`,
		`{"messages":[{"role":"user","content":"hi"}],"model":"a\/b","x":{"model":"inner"}}`,
		"{\"model\":\"m\u00e9\",\"unknown\":[1,2,{\"a\":null}]}\n",
		`{"model":"m1","model":"m2"}`,
		`{"mod\u0065l":"x"}`,
		`{"model":"\ud83d\ude00"}`,
		`{"model":"m"}{}`,
		`[{"model":"m"}]`,
		`{"model":7}`,
		`{}`,
		`{"model":""}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), "upstream-model")
		f.Add([]byte(s), "")
	}
	f.Fuzz(func(t *testing.T, body []byte, newModel string) {
		req, e := parseJSONRequestDecoded(body)
		sameAsExact(t, body, req, e)
		if e != nil {
			if e.Status != 400 || e.Code == "" {
				t.Fatalf("refusal %d %q", e.Status, e.Code)
			}
			if acceptable(body) {
				t.Fatalf("refused (%s) an unambiguous body %q", e.Code, body)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if req.model == "" {
			t.Fatal("accepted an empty model")
		}
		if same := req.withModel(req.model); !bytes.Equal(same, body) {
			t.Fatalf("unchanged model altered the body:\n in %q\nout %q", body, same)
		}
		inKeys, inValues, ok := topLevelMembers(body)
		if !ok {
			t.Fatalf("accepted a body that is not one object: %q", body)
		}
		models := 0
		for i := 0; i < len(inKeys); i++ {
			if inKeys[i] == "model" {
				models++
			}
		}
		if models != 1 {
			t.Fatalf("accepted %d model keys: %q", models, body)
		}
		for i := 0; i < len(inKeys); i++ {
			if inKeys[i] != "model" && strings.EqualFold(inKeys[i], "model") {
				t.Fatalf("accepted a case-variant model key %q: %q", inKeys[i], body)
			}
		}
		if !utf8.ValidString(newModel) {
			return
		}
		out := req.withModel(newModel)
		if !json.Valid(out) {
			t.Fatalf("rewritten body is not JSON: %q", out)
		}
		outKeys, outValues, ok := topLevelMembers(out)
		if !ok || len(outKeys) != len(inKeys) {
			t.Fatalf("rewrite changed the members:\n in %q\nout %q", body, out)
		}
		for i := 0; i < len(inKeys); i++ {
			if outKeys[i] != inKeys[i] {
				t.Fatalf("key %d changed: %q -> %q", i, inKeys[i], outKeys[i])
			}
			if inKeys[i] == "model" {
				var m string
				if err := json.Unmarshal(outValues[i], &m); err != nil || m != newModel {
					t.Fatalf("model is %s, want %q", outValues[i], newModel)
				}
				continue
			}
			if !bytes.Equal(inValues[i], outValues[i]) {
				t.Fatalf("value of %q changed: %s -> %s", inKeys[i], inValues[i], outValues[i])
			}
		}
		// Outside the model value, the bytes are the input's.
		if !bytes.Equal(out[:req.modelStart], body[:req.modelStart]) || !bytes.Equal(out[len(out)-(len(body)-req.modelEnd):], body[req.modelEnd:]) {
			t.Fatalf("bytes around the model changed:\n in %q\nout %q", body, out)
		}
	})
}

// FuzzPassthroughModel targets the model check of restricted native
// passthrough (singleTopLevelModel over the whole body).
func FuzzPassthroughModel(f *testing.F) {
	seeds := []string{
		`{"model":"m1"}`,
		`{"stream":true,"model":"m1","messages":[]}`,
		`{"x":{"model":"inner"},"model":"outer"}`,
		`{"model":["m1"]}`,
		`{"model":"m1","model":"m2"}`,
		`{"model":"m1","Model":"m2"}`,
		`{"mod\u0065l":"m1"}`,
		`{"model":"m`,
		`not json`,
		`[]`,
		``,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		model, found := singleTopLevelModel(body)
		if found && model == "" {
			t.Fatal("found an empty model")
		}
		if !found {
			return
		}
		req, e := parseJSONRequest(body)
		if e != nil || model != req.model || req.modelStart >= maxPassthroughPeekBytes {
			t.Fatalf("authorized %q but a full parse says %v (body %q)", model, e, body)
		}
		// What a later reader of the whole body takes as the model must
		// be what was authorized: the last "model" key, matched exactly
		// (most JSON libraries) or case-insensitively (Go's encoding/json).
		var exact map[string]json.RawMessage
		if err := json.Unmarshal(body, &exact); err != nil {
			t.Fatalf("authorized a body encoding/json refuses: %v", err)
		}
		var last string
		if json.Unmarshal(exact["model"], &last) != nil || last != model {
			t.Fatalf("authorized %q but the body's model is %s (body %q)", model, exact["model"], body)
		}
		var folded struct {
			Model json.RawMessage `json:"model"`
		}
		if err := json.Unmarshal(body, &folded); err != nil || json.Unmarshal(folded.Model, &last) != nil || last != model {
			t.Fatalf("authorized %q but a case-insensitive reader sees %s (body %q)", model, folded.Model, body)
		}
	})
}

func FuzzRelaySSE(f *testing.F) {
	seeds := []string{
		"data: a\n\ndata: [DONE]\n\n",
		"event: x\r\ndata: y\r\n\r\n",
		": comment\n\n",
		"data: unterminated",
		"\n\n\n",
		"",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint16(0))
		f.Add([]byte(s), uint16(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		rec := httptest.NewRecorder()
		res := relaySSE(rec, bytes.NewReader(data), int64(len(data))+1, openAIFormat.isStreamEnd, nil)
		complete := lastEventBoundary(data)
		if !bytes.Equal(rec.Body.Bytes(), data[:complete]) || res.err != nil || res.tooLarge || res.bytes != int64(len(data)) {
			t.Fatalf("under the cap: out %q err %v, in %q", rec.Body.Bytes(), res.err, data)
		}
		if res.partial != (complete < len(data)) {
			t.Fatalf("partial = %v for %q", res.partial, data)
		}
		if res.sawEnd != bytes.Contains(data, []byte("[DONE]")) && res.sawEnd {
			t.Fatalf("saw [DONE] in %q", data)
		}
		limit := int64(cut) % (int64(len(data)) + 1)
		rec = httptest.NewRecorder()
		res = relaySSE(rec, bytes.NewReader(data), limit, openAIFormat.isStreamEnd, nil)
		out := rec.Body.Bytes()
		if int64(len(out)) > limit || !bytes.HasPrefix(data, out) {
			t.Fatalf("capped at %d: out %q, in %q", limit, out, data)
		}
		if res.tooLarge != (int64(len(data)) > limit) {
			t.Fatalf("tooLarge %v with %d bytes and limit %d", res.tooLarge, len(data), limit)
		}
	})
}

// hasFoldedDuplicateKeys reports whether any object in doc has two keys
// equal under case folding: JSON decoders disagree on which one wins.
func hasFoldedDuplicateKeys(doc []byte) bool {
	dup, err := scanForDuplicates(json.NewDecoder(bytes.NewReader(doc)))
	return dup || err != nil
}

func scanForDuplicates(dec *json.Decoder) (bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return false, nil
	}
	var keys []string
	for dec.More() {
		if d == '{' {
			kt, err := dec.Token()
			if err != nil {
				return false, err
			}
			k, _ := kt.(string)
			for i := 0; i < len(keys); i++ {
				if strings.EqualFold(keys[i], k) {
					return true, nil
				}
			}
			keys = append(keys, k)
		}
		if dup, err := scanForDuplicates(dec); dup || err != nil {
			return dup, err
		}
	}
	_, err = dec.Token()
	return false, err
}

// neutralizeSecretForms keeps fuzzed configs from reading files or the
// environment.
func neutralizeSecretForms(c *Config) {
	for _, p := range c.Providers {
		if p != nil && (strings.HasPrefix(p.APIKey, "file:") || strings.HasPrefix(p.APIKey, "env:")) {
			p.APIKey = "literal"
		}
	}
	if c.Users != nil {
		for _, u := range c.Users.Inline {
			if u != nil && (strings.HasPrefix(u.APIKey, "file:") || strings.HasPrefix(u.APIKey, "env:")) {
				u.APIKey = "literal-" + u.Name
			}
		}
	}
}

var configSeeds = []string{
	fullConfigJSON,
	`{"providers":{"p":{"type":"openai"}}}`,
	`{"providers":{"p":null},"groups":{"g":null}}`,
	`{"Providers":{"p":{"TYPE":"gemini","apikey":"k"}}}`,
	`{"providers":{"p":{"type":"openai","models":"a,b","passthrough":"false"}},"passthroughUnknown":"true"}`,
	`{"providers":{"p":{"type":"openai"}},"users":{"inline":[{"name":"u","group":"g","apiKey":"k","admin":"1"}]},"groups":{"g":""}}`,
	`{"requestTimeout":"1ms","providers":{"v1":{"type":"openai"}}}`,
	`{"bogus":1}`,
	`{"providers":{"p":{"type":"openai"}},"providers":{"q":{"type":"openai"}}}`,
}

func FuzzConfigFromMap(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var raw map[string]interface{}
		if json.Unmarshal(doc, &raw) != nil {
			return
		}
		fromMap, mapErr := ConfigFromMap(raw)
		if mapErr == nil {
			neutralizeSecretForms(fromMap)
			if g, err := New(nil, fromMap, Options{LogOutput: io.Discard}); err == nil {
				_ = g.Close()
			} else if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("New error %q", err)
			}
		} else if !strings.HasPrefix(mapErr.Error(), "config: ") {
			t.Fatalf("ConfigFromMap error %q", mapErr)
		}
		// Whatever the strict JSON decoder accepts, the map decoder accepts
		// with the same result.
		strict, err := DecodeConfigJSON(doc)
		if err != nil || hasFoldedDuplicateKeys(doc) {
			return
		}
		if mapErr != nil {
			t.Fatalf("DecodeConfigJSON accepts %q but ConfigFromMap says %v", doc, mapErr)
		}
		fromMap2, _ := ConfigFromMap(raw)
		if !reflect.DeepEqual(normalizeEmpty(fromMap2), normalizeEmpty(strict)) {
			a, _ := json.Marshal(fromMap2)
			b, _ := json.Marshal(strict)
			t.Fatalf("decoders disagree on %q:\nmap  %s\njson %s", doc, a, b)
		}
	})
}

func FuzzDecodeConfigJSON(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		cfg, err := DecodeConfigJSON(doc)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("accepted invalid JSON %q", doc)
		}
		// A decoded config survives a round trip.
		again, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg2, err := DecodeConfigJSON(again)
		if err != nil || !reflect.DeepEqual(cfg2, cfg) {
			t.Fatalf("round trip: %v\n%s", err, again)
		}
		neutralizeSecretForms(cfg)
		g, err := New(nil, cfg, Options{LogOutput: io.Discard})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("New error %q", err)
			}
			return
		}
		_ = g.Close()
	})
}

// lastEventBoundary is the offset just past the last blank line of an SSE
// byte stream: everything after it is an unfinished event.
func lastEventBoundary(data []byte) int {
	boundary, start := 0, 0
	for start < len(data) {
		i := bytes.IndexByte(data[start:], '\n')
		if i < 0 {
			break
		}
		line := data[start : start+i+1]
		start += i + 1
		if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			boundary = start
		}
	}
	return boundary
}

// acceptable is the reference rule for parseJSONRequest: one JSON object
// with exactly one top-level key spelled "model" in any case, spelled
// exactly "model", holding a non-empty string.
func acceptable(body []byte) bool {
	keys, values, ok := topLevelMembers(body)
	if !ok || !json.Valid(body) {
		return false
	}
	found := 0
	model := ""
	for i := 0; i < len(keys); i++ {
		if !strings.EqualFold(keys[i], "model") {
			continue
		}
		if keys[i] != "model" {
			return false
		}
		found++
		if json.Unmarshal(values[i], &model) != nil {
			return false
		}
	}
	return found == 1 && model != ""
}

// FuzzUsersFile: any users-file content either loads into users that
// each have a name, at least one grant and a key digest, with unique
// names, or fails with an error — never a panic.
func FuzzUsersFile(f *testing.F) {
	seeds := []string{
		`{"users":[{"name":"alice","group":"g","apiKey":"sk-1"}]}`,
		`{"users":[{"name":"a","groups":["g","h"],"apiKey":"sk-1","providers":["p*"],"models":["m"]}]}`,
		`{"users":[{"name":"a","group":"g","apiKey":"sk-1"},{"name":"a","group":"g","apiKey":"sk-2"}]}`,
		`{"users":[null]}`,
		`{"users":[{"name":"a","group":"nope","apiKey":"sk-1"}]}`,
		`{"users":[{"name":"a","group":"g","apiKey":"sk-1","extra":1}]}`,
		`{"users":[]} {}`,
		`{}`,
		``,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	groups := map[string]*grant{"g": {name: "group g"}, "h": {name: "group h"}}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := dir + "/users.json"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		users, _, err := loadUsersFile(path, groups)
		if err != nil {
			if users != nil {
				t.Fatal("users returned with an error")
			}
			return
		}
		names := map[string]bool{}
		for i := 0; i < len(users); i++ {
			u := users[i]
			if u.user.name == "" || names[u.user.name] || len(u.user.grants) == 0 {
				t.Fatalf("bad user %+v from %q", u.user, data)
			}
			names[u.user.name] = true
		}
	})
}

// sameAsExact fails unless parseJSONRequestDecoded's answer for body
// (req, e) is what the exact scanner gives: the same refusal, or the
// same request (the max_tokens key span aside, which the fast path
// leaves to forOpenAI), with the same top-level fields when both read
// them.
func sameAsExact(t *testing.T, body []byte, req *jsonRequest, e *apiError) {
	t.Helper()
	exact, ee := parseJSONRequestExact(body)
	if (e == nil) != (ee == nil) {
		t.Fatalf("fast path %v, exact %v for %q", e, ee, body)
	}
	if e != nil {
		if e.Code != ee.Code || e.Message != ee.Message {
			t.Fatalf("fast path refused with %s %q, exact with %s %q", e.Code, e.Message, ee.Code, ee.Message)
		}
		return
	}
	got, want := *req, *exact
	got.maxTokensKeyStart, got.maxTokensKeyEnd, want.maxTokensKeyStart, want.maxTokensKeyEnd = 0, 0, 0, 0
	if got.model != want.model || got.hasStreamOptions != want.hasStreamOptions || got.modelStart != want.modelStart || got.modelEnd != want.modelEnd ||
		got.stream != want.stream || got.includeUsage != want.includeUsage || got.hasMaxTokens != want.hasMaxTokens ||
		got.hasMaxCompletionTokens != want.hasMaxCompletionTokens || got.maxOutputTokens != want.maxOutputTokens {
		t.Fatalf("fast path read %+v, exact %+v, for %q", got, want, body)
	}
	if exact.fields == nil {
		t.Fatalf("exact read no fields for %q", body)
	}
	if req.fields == nil {
		return
	}
	if len(req.fields) != len(exact.fields) {
		t.Fatalf("fast path read %d fields, exact %d, for %q", len(req.fields), len(exact.fields), body)
	}
	for k, v := range req.fields {
		if w, ok := exact.fields[k]; !ok || !bytes.Equal(v, w) {
			t.Fatalf("field %q: fast path %q, exact %q (present %v), for %q", k, v, w, ok, body)
		}
	}
}

// TestParseJSONRequestFastPathMatchesExact covers the bodies either path
// may see: clean ones the fast path reads, and each reason it defers.
func TestParseJSONRequestFastPathMatchesExact(t *testing.T) {
	bodies := []string{
		`{"model":"m1"}`,
		` { "model" :	"m1" , "stream" : true }`,
		`{"stream":true,"stream_options":{"include_usage":true},"model":"m1","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"o3","max_tokens":100,"max_completion_tokens":50}`,
		`{"max_completion_tokens":null,"max_tokens":7,"model":"m"}`,
		`{"max_tokens":"x","model":"m"}`,
		`{"model":"m","messages":[{"content":"say \"model"}]}`,
		`{"messages":[{"content":"say \"model"}],"MODEL":"x"}`,
		`{"model":"m","Model":"n"}`,
		`{"model":"m1","model":"m2"}`,
		`{"mod\u0065l":"x"}`,
		`{"model":"caf\u00e9"}`,
		`{"model":"\ud83d\ude00"}`,
		`{"model":""}`,
		`{"model":7}`,
		`{"model":null}`,
		`{"x":{"model":"inner"}}`,
		`{"model":"m"}{}`,
		`[{"model":"m"}]`,
		`null`,
		`{"model":"m",}`,
		`{"stream":false,"model":"m","stream":true}`,
		`{"model":"m","x":1,"y":{"z":[1,"]"]},"x":[2]}`,
		"{\"model\":\"m\",\"k\xff\":1,\"t\":\"\xfe\"}",
		`{"model":"m","a\u0062":1,"ab":2}`,
		`{"model":"m","\u4e2d":1}`,
		`{"model":"m","a\"b":{"c":"d\\"}}`,
	}
	for _, b := range bodies {
		req, e := parseJSONRequestDecoded([]byte(b))
		sameAsExact(t, []byte(b), req, e)
	}
}
