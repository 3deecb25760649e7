package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// pathsFuzzConfig has one passthrough provider of each type under a
// base path, and MCP servers and an agent of each URL shape: a plain
// endpoint, a legacy HTTP+SSE one (…/sse), one with a trailing slash.
// Nothing is ever dialled.
const pathsFuzzConfig = `{
  "providers": {
    "oa": {"type": "openai", "baseUrl": "http://127.0.0.1:9/base/v1", "apiKey": "sk-fuzz-provider-0001"},
    "gm": {"type": "gemini", "baseUrl": "http://127.0.0.1:9/g", "apiKey": "fuzz-gemini-key-0001"}
  },
  "mcpServers": {
    "m": {"url": "http://127.0.0.1:9/base/mcp"},
    "legacy": {"url": "http://127.0.0.1:9/x/sse"},
    "slash": {"url": "http://127.0.0.1:9/s/mcp/"}
  },
  "agents": {"a": {"url": "http://127.0.0.1:9/agent"}},
  "groups": {"all": {}},
  "users": {"inline": [{"name": "alice", "group": "all", "apiKey": "sk-fuzz-alice-0001"}]}
}`

func pathsFuzzGateway(f *testing.F) *Gateway {
	cfg, err := DecodeConfigJSON([]byte(pathsFuzzConfig))
	if err != nil {
		f.Fatal(err)
	}
	g, err := New(nil, cfg, Options{Name: "fuzz", LogOutput: io.Discard})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = g.Close() })
	return g
}

// dotSegment reports whether a decoded path holds a "." or ".." segment
// under "/" or "\" (a separator some servers honour).
func dotSegment(p string) bool {
	parts := strings.Split(strings.ReplaceAll(p, "\\", "/"), "/")
	for i := 0; i < len(parts); i++ {
		if parts[i] == "." || parts[i] == ".." {
			return true
		}
	}
	return false
}

// sentPath is the path an upstream reads from u's request line
// (decoded), false when that line does not parse.
func sentPath(u *url.URL) (string, bool) {
	back, err := url.ParseRequestURI(u.RequestURI())
	if err != nil {
		return "", false
	}
	return back.Path, true
}

// FuzzPassthroughPath: a native passthrough path reaches its provider's
// host, never another, at exactly the path its grants were checked
// against (base path + the decoded rest), and an admitted path holds no
// dot segment under any separator; a Gemini path's model has no
// separator in it.
func FuzzPassthroughPath(f *testing.F) {
	g := pathsFuzzGateway(f)
	seeds := []string{
		"/oa/v1/chat/completions", "/oa/v1/files?purpose=x", "/oa/v1/a%2Fb", "/oa/v1/%2e%2e/x", "/oa/..%5cx",
		"/oa/v1/x\\..\\y", "/oa", "/oa/", "/oa//evil.example/x", "/oa/@evil.example/", "/oa/http://evil.example/",
		"/gm/v1beta/models/gemini-2.5-flash:generateContent", "/gm/v1beta/models/a%2Fb:x", "/gm/v1beta/tunedModels/x",
		"/gm/v1beta/models/", "/nope/x", "//oa/x",
	}
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i])
	}
	f.Fuzz(func(t *testing.T, uri string) {
		in, err := url.ParseRequestURI(uri)
		if err != nil || in.Host != "" || in.User != nil {
			return
		}
		p, rest, ok := g.passthroughTarget(in.Path)
		if !ok {
			return
		}
		target := passthroughURL(p, in)
		if target.Scheme != p.base.Scheme || target.Host != p.base.Host || target.User != nil || target.Fragment != "" {
			t.Fatalf("%q goes to %s, not to %s", uri, target, p.base)
		}
		got, ok := sentPath(target)
		if !ok {
			t.Fatalf("%q: the upstream request line %q does not parse", uri, target.RequestURI())
		}
		if want := p.base.Path + strings.TrimPrefix(in.Path, "/"+p.name); got != want {
			t.Fatalf("%q reaches %q, but %q was authorized (rest %q)", uri, got, want, rest)
		}
		if target.RawQuery != in.RawQuery {
			t.Fatalf("%q: query %q became %q", uri, in.RawQuery, target.RawQuery)
		}
		if !hasDotSegment(rest) && dotSegment(rest) {
			t.Fatalf("%q admitted with a dot segment in %q", uri, rest)
		}
		if m := pathModel(p, rest); strings.ContainsAny(m, "/:") {
			t.Fatalf("%q: path model %q", uri, m)
		}
	})
}

// FuzzTargetPath: a /mcp/{name}/… or /a2a/{name}/… path is refused (400
// or 404) or reaches the named target's host under its mount path, at
// the decoded path the client sent, with no dot segment or control
// character, the client's query after the configured one.
func FuzzTargetPath(f *testing.F) {
	g := pathsFuzzGateway(f)
	alice := &userRuntime{name: "alice", grants: []*grant{{name: "group all", group: "all"}}}
	seeds := []string{
		"/mcp/m", "/mcp/m/", "/mcp/m/tools?x=1", "/mcp/legacy/sse", "/mcp/legacy/messages?sessionId=abc", "/mcp/slash",
		"/mcp/m/%2e%2e/x", "/mcp/m/a%2F..%2Fb", "/mcp/m/a%5c..%5cb", "/mcp/m/%00", "/mcp/%6d/x", "/mcp/m%2Fx/y",
		"/a2a/a/.well-known/agent-card.json", "/a2a/a/%zz", "/mcp/", "/mcp/nope/x",
	}
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i])
	}
	f.Fuzz(func(t *testing.T, uri string) {
		in, err := url.ParseRequestURI(uri)
		if err != nil || in.Host != "" || in.User != nil {
			return
		}
		kind := targetMCP
		if strings.HasPrefix(in.Path, "/a2a/") {
			kind = targetAgent
		}
		c := &call{g: g, r: &http.Request{Method: http.MethodPost, URL: in, Header: http.Header{}}, user: alice}
		tg, sub, e := admitTarget(c, kind)
		if e != nil {
			if e.Status != 400 && e.Status != 404 {
				t.Fatalf("%q refused with %d %s", uri, e.Status, e.Code)
			}
			return
		}
		target := targetURL(tg, sub, in)
		if target.Scheme != tg.base.Scheme || target.Host != tg.base.Host || target.User != nil || target.Fragment != "" {
			t.Fatalf("%q goes to %s, not to %s", uri, target, tg.base)
		}
		got, ok := sentPath(target)
		if !ok {
			t.Fatalf("%q: the upstream request line %q does not parse", uri, target.RequestURI())
		}
		mount := mountPath(tg)
		if sub == "" {
			if got != tg.endpointPath && !(tg.endpointPath == "" && got == "/") {
				t.Fatalf("%q reaches %q, not the configured %q", uri, got, tg.endpointPath)
			}
		} else {
			dec, _ := url.PathUnescape(sub)
			if got != mount+"/"+dec {
				t.Fatalf("%q reaches %q, want %q", uri, got, mount+"/"+dec)
			}
			if dotSegment(dec) || strings.ContainsAny(dec, headerControlChars) {
				t.Fatalf("%q admitted with %q below the mount", uri, dec)
			}
		}
		if in.RawQuery != "" && !strings.HasSuffix(target.RawQuery, in.RawQuery) {
			t.Fatalf("%q: query %q became %q", uri, in.RawQuery, target.RawQuery)
		}
	})
}

// endpointExchange is a proxied exchange of the legacy target, as the
// endpoint rewrite sees it.
func endpointExchange(g *Gateway) *targetExchange {
	tg := g.target(targetMCP, "legacy")
	c := &call{g: g, trace: &requestTrace{}}
	return &targetExchange{c: c, t: tg, target: targetURL(tg, "sse", &url.URL{})}
}

// FuzzEndpointRewrite: the URL a legacy server's endpoint event names is
// mapped to a gateway path (proxiedPath) only when the proxy maps that
// path back to the same upstream URL; and the stream rewriter, whatever
// the chunking, changes only the first event — into the mapped endpoint
// when it is an endpoint event the SSE reader sees as one — and relays
// everything else byte for byte.
func FuzzEndpointRewrite(f *testing.F) {
	g := pathsFuzzGateway(f)
	alice := &userRuntime{name: "alice", grants: []*grant{{name: "group all", group: "all"}}}
	seeds := []string{
		"event: endpoint\ndata: /x/messages?sessionId=1\n\n",
		": hi\n\nevent: endpoint\r\ndata: http://127.0.0.1:9/x/messages/?s=%2F\r\n\r\ndata: {}\n\n",
		"event: endpoint\ndata: messages?sessionId=1\n\r\nevent: message\ndata: {}\n\n",
		"\nevent: endpoint\ndata: /x/messages\n\n",
		"event: endpoint\ndata: http://other.example/x/messages\n\n",
		"event: endpoint\ndata: /x/sse\n\n",
		"event: endpoint\ndata: /x/../y\n\n",
		"event: endpoint\ndata: /x/a%2e%2e\n\n",
		"event: endpoint\ndata: a\ndata: b\n\n",
		"data: x\n\n",
	}
	for i := 0; i < len(seeds); i++ {
		f.Add([]byte(seeds[i]), uint8(i*7))
	}
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		if len(stream) > maxEndpointEventBytes/2 {
			return
		}
		x := endpointExchange(g)
		first, firstLen := firstSSEEvent(stream)
		oneLine := dataLines(first.Raw) == 1
		if first.Name == "endpoint" && oneLine {
			checkEndpointRoundTrip(t, g, alice, x, string(first.Data))
		}
		whole := rewriteAll(t, x, stream, 0)
		if cut := rewriteAll(t, x, stream, int(chunk)+1); !bytes.Equal(cut, whole) {
			t.Fatalf("chunked by %d the rewrite differs:\n%q\n%q", int(chunk)+1, cut, whole)
		}
		if firstLen < 0 {
			if !bytes.Equal(whole, stream) {
				t.Fatalf("a stream without a complete event was changed: %q -> %q", stream, whole)
			}
			return
		}
		// Everything after the first event goes as it came, and so do
		// the comment blocks before it.
		wantTail := stream[firstLen:]
		if !bytes.HasSuffix(whole, wantTail) {
			t.Fatalf("bytes after the first event changed: %q -> %q", stream, whole)
		}
		rewritten, gotLen := firstSSEEvent(whole)
		if gotLen < 0 || !bytes.Equal(whole[gotLen:], wantTail) {
			t.Fatalf("the rewritten first event is not one event: %q -> %q", stream, whole)
		}
		mapped, ok := "", false
		if first.Name == "endpoint" && oneLine {
			mapped, ok = proxiedPath(x.t, x.target, string(first.Data))
		}
		if !ok {
			if !bytes.Equal(whole, stream) {
				t.Fatalf("an event that is no mappable endpoint was changed: %q -> %q", stream, whole)
			}
			return
		}
		if rewritten.Name != "endpoint" || string(rewritten.Data) != mapped {
			t.Fatalf("the endpoint %q became %q %q, want %q (stream %q)", first.Data, rewritten.Name, rewritten.Data, mapped, stream)
		}
	})
}

// firstSSEEvent is the first event with a field that the SSE reader
// sees in stream, and the offset just past it (-1 when there is none).
func firstSSEEvent(stream []byte) (sse.Event, int) {
	off := 0
	for off < len(stream) {
		n := sse.EventLen(stream[off:])
		if n == 0 {
			return sse.Event{}, -1
		}
		ev := sse.ParseEvent(stream[off : off+n])
		off += n
		if ev.HasField {
			return ev, off
		}
	}
	return sse.Event{}, -1
}

// dataLines counts an event's data fields.
func dataLines(raw []byte) int {
	n := 0
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSuffix(lines[i], "\r")
		if l == "data" || strings.HasPrefix(l, "data:") {
			n++
		}
	}
	return n
}

// rewriteAll reads stream through an endpointRewriter whose source
// delivers at most chunk bytes per Read (0: all at once).
func rewriteAll(t *testing.T, x *targetExchange, stream []byte, chunk int) []byte {
	t.Helper()
	var src io.Reader = bytes.NewReader(stream)
	if chunk > 0 {
		src = &choppedReader{data: stream, n: chunk}
	}
	rw := &endpointRewriter{src: io.NopCloser(src), x: x}
	out, err := io.ReadAll(rw)
	if err != nil {
		t.Fatalf("rewriter: %v", err)
	}
	return out
}

// choppedReader delivers data n bytes per Read.
type choppedReader struct {
	data []byte
	n    int
}

func (r *choppedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := r.n
	if n > len(p) {
		n = len(p)
	}
	if n > len(r.data) {
		n = len(r.data)
	}
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// checkEndpointRoundTrip: when ref maps to a gateway path, the proxy
// admits that path (or refuses it as a traversal) and sends it to the
// URL ref names.
func checkEndpointRoundTrip(t *testing.T, g *Gateway, user *userRuntime, x *targetExchange, ref string) {
	t.Helper()
	mapped, ok := proxiedPath(x.t, x.target, ref)
	if !ok {
		return
	}
	want, err := x.target.Parse(strings.TrimSpace(ref))
	if err != nil {
		t.Fatalf("mapped %q, which does not parse: %v", ref, err)
	}
	in, err := url.ParseRequestURI(mapped)
	if err != nil || !strings.HasPrefix(in.Path, "/mcp/legacy/") {
		t.Fatalf("%q mapped to %q, not a path of the target", ref, mapped)
	}
	c := &call{g: g, r: &http.Request{Method: http.MethodPost, URL: in, Header: http.Header{}}, user: user}
	tg, sub, e := admitTarget(c, targetMCP)
	if e != nil {
		if e.Status != 400 {
			t.Fatalf("%q mapped to %q, refused with %d %s", ref, mapped, e.Status, e.Code)
		}
		return
	}
	got := targetURL(tg, sub, in)
	if got.Host != want.Host || got.Path != want.Path || got.RawQuery != want.RawQuery {
		t.Fatalf("%q mapped to %q, which reaches %s", ref, mapped, got)
	}
}
