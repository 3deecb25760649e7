package apierr

import (
	"errors"
	"net/http"
	"testing"
)

func TestErrorMessage(t *testing.T) {
	e := New(http.StatusBadGateway, "server_error", "upstream_error", "provider \"p\" could not be reached")
	e.Upstream = EmbedUpstream([]byte(`{"secret":"upstream body"}`))
	if got := e.Error(); got != `provider "p" could not be reached` {
		t.Errorf("without a cause: %q", got)
	}
	e.Cause = errors.New("dial tcp: refused")
	if got := e.Error(); got != `provider "p" could not be reached: dial tcp: refused` {
		t.Errorf("with a cause: %q", got)
	}
	if e.Class != ClassNone {
		t.Errorf("New gives class %d, want ClassNone", e.Class)
	}
}

func TestBadRequest(t *testing.T) {
	e := BadRequest("invalid_json", "request body is not valid JSON")
	if e.Status != 400 || e.Kind != "invalid_request_error" || e.Code != "invalid_json" || e.Message != "request body is not valid JSON" {
		t.Errorf("got %+v", e)
	}
}

func TestEmbedUpstream(t *testing.T) {
	cases := []struct {
		name string
		body string
		want string
	}{
		{"json_object", `{"error":{"message":"x"}}`, `{"error":{"message":"x"}}`},
		{"text", "Bad Gateway <html>", `"Bad Gateway \u003chtml\u003e"`},
		{"empty", "", ""},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			got := EmbedUpstream([]byte(c.body))
			if string(got) != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if c.body == "" && got != nil {
				t.Errorf("empty body gives %q, want nil", got)
			}
		})
	}
}
