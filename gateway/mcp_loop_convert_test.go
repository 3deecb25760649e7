package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolLoopConvert: the JSON helpers on their own.
func TestToolLoopConvert(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"model":"m","messages":[]}`, false},
		{`{"model":"m","tools":[]}`, false},
		{`{"model":"m","tools":[{"type":"function"}]}`, true},
		{`{"model":"m","functions":[{"name":"f"}]}`, true},
		{`{"model":"m","messages":[{"role":"user","content":"\"tools\""}]}`, false},
	} {
		if got := clientSentTools([]byte(tc.raw)); got != tc.want {
			t.Errorf("clientSentTools(%s) = %v", tc.raw, got)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"weather_forecast", "weather_forecast"},
		{"gh_search.code", "gh_search_code"},
		{strings.Repeat("a", 65), ""},
	} {
		if got := offeredToolName(tc.in); got != tc.want {
			t.Errorf("offeredToolName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		res, want string
		isErr     bool
	}{
		{`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "a\nb", false},
		{`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`, "[image image/png]", false},
		{`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"body"}}]}`, "body", false},
		{`{"content":[{"type":"text","text":"boom"}],"isError":true}`, "boom", true},
		{`[1]`, "the tool's result is not an MCP CallToolResult", true},
	} {
		got, isErr := toolResultText(json.RawMessage(tc.res))
		if got != tc.want || isErr != tc.isErr {
			t.Errorf("toolResultText(%s) = %q %v", tc.res, got, isErr)
		}
	}
	long := strings.Repeat("é", maxToolResultBytes)
	if got := capToolText(long); len(got) > maxToolResultBytes+64 || !strings.HasSuffix(got, "bytes]") {
		t.Errorf("capToolText: %d bytes", len(got))
	}
}
