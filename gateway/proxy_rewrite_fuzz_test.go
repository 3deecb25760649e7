package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// FuzzAgentCard: an agent card that is a JSON object is patched in
// place — the result means the card with its top-level "url" and every
// url of additionalInterfaces[] / supportedInterfaces[] mapped, nothing
// else changed; anything else is refused and left as it came.
func FuzzAgentCard(f *testing.F) {
	seeds := []string{
		`{"name":"a","url":"http://127.0.0.1:9/agent","additionalInterfaces":[{"url":"http://127.0.0.1:9/agent/rpc","transport":"JSONRPC"}]}`,
		`{"url":"x","supportedInterfaces":[{"url":"y"},{"url":7},null,{"u\u0072l":"z"}],"skills":[{"url":"keep"}]}`,
		`{"url":"a","url":"b"}`, `{"url":null}`, ` {"additionalInterfaces":{"url":"x"}} `, `[{"url":"x"}]`, `{"url":"x"} {}`, `{`,
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]))
	}
	mapURL := func(s string) string { return "https://gw.example/a2a/a?from=" + strings.ToUpper(s) }
	f.Fuzz(func(t *testing.T, card []byte) {
		out, ok := patchAgentCard(card, mapURL)
		if !ok {
			if !bytes.Equal(out, card) {
				t.Fatalf("a refused card was changed: %q -> %q", card, out)
			}
			return
		}
		var in, got interface{}
		if json.Unmarshal(card, &in) != nil {
			return // trailing data after the object: relayed as patched, no meaning to compare
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("the patched card is not JSON (%v): %q from %q", err, out, card)
		}
		want := mapCardURLs(in, mapURL)
		if !reflect.DeepEqual(got, want) {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			t.Fatalf("patched card\n%s\nwant\n%s\nfrom %q", a, b, card)
		}
	})
}

// mapCardURLs is the reference patch on the decoded card.
func mapCardURLs(card interface{}, mapURL func(string) string) interface{} {
	top, ok := card.(map[string]interface{})
	if !ok {
		return card
	}
	if s, isString := top["url"].(string); isString {
		top["url"] = mapURL(s)
	}
	lists := []string{"additionalInterfaces", "supportedInterfaces"}
	for i := 0; i < len(lists); i++ {
		elems, isList := top[lists[i]].([]interface{})
		for j := 0; isList && j < len(elems); j++ {
			if obj, isObject := elems[j].(map[string]interface{}); isObject {
				if s, isString := obj["url"].(string); isString {
					obj["url"] = mapURL(s)
				}
			}
		}
	}
	return top
}

// FuzzRedaction: a provider's or target's secret never comes back in
// the first MiB of an error answer or in any header value, whatever
// surrounds it; what holds no secret is relayed byte for byte.
func FuzzRedaction(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"Incorrect API key provided: sk-fuzz-provider-0001"}}`), "sk-fuzz-provider-0001", "Bearer sk-fuzz-provider-0001")
	f.Add([]byte("sk-fuzz-sk-fuzz-provider-0001-provider-0001"), "sk-fuzz-provider-0001", "x")
	f.Add([]byte("no secret here"), "target-token-0123456789", "target-token-0123456789target-token-0123456789")
	f.Add([]byte(""), "short", "")
	f.Fuzz(func(t *testing.T, body []byte, secret, header string) {
		resp := &http.Response{Body: io.NopCloser(bytes.NewReader(body)), Header: http.Header{"X-Echo": {header}}, ContentLength: int64(len(body))}
		redactResponseBody(resp, secret)
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		checkRedacted(t, body, got, secret)
		if len(secret) < minRedactedSecret {
			return
		}
		resp = &http.Response{Body: io.NopCloser(bytes.NewReader(body)), Header: http.Header{"X-Echo": {header}}}
		secrets := []string{secret}
		redactTargetHeaders(resp.Header, secrets)
		redactTargetBody(resp, secrets)
		got, err = io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		checkRedacted(t, body, got, secret)
		if h := resp.Header.Get("X-Echo"); strings.Contains(h, secret) || !strings.Contains(header, secret) && h != header {
			t.Fatalf("header %q became %q (secret %q)", header, h, secret)
		}
	})
}

func checkRedacted(t *testing.T, body, got []byte, secret string) {
	t.Helper()
	if secret == "" || !bytes.Contains(body, []byte(secret)) {
		if !bytes.Equal(got, body) {
			t.Fatalf("a body without the secret changed: %q -> %q", body, got)
		}
		return
	}
	if overlapsMarker(secret) {
		return // the marker itself would spell it: no real key does
	}
	if bytes.Contains(got, []byte(secret)) {
		t.Fatalf("the secret %q came back in %q (from %q)", secret, got, body)
	}
}

// overlapsMarker reports whether secret could be spelled with the help of
// the "[REDACTED]" marker: it is inside it, or one of its ends is one of
// the marker's.
func overlapsMarker(secret string) bool {
	const marker = "[REDACTED]"
	if strings.Contains(marker, secret) {
		return true
	}
	for n := 1; n < len(marker) && n <= len(secret); n++ {
		if strings.HasPrefix(secret, marker[len(marker)-n:]) || strings.HasSuffix(secret, marker[:n]) {
			return true
		}
	}
	return false
}
