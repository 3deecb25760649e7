package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/sse"
)

// The per-target proxy's rewrites of what a target answers (everything
// else is relayed byte for byte):
//
//   - A legacy HTTP+SSE stream (a GET answered with text/event-stream):
//     its first event, when it is "event: endpoint", names the URL the
//     client posts its messages to (relative, absolute-path or absolute).
//     When that URL is the target's own origin under the proxy's mount
//     path (mountPath), its data becomes /mcp/{name}/<path below the
//     mount>?<query>, which the proxy maps back to the same upstream URL.
//     A URL elsewhere is relayed unchanged (logged). Comment-only blocks
//     before the first event pass through as they come; only the first
//     maxEndpointEventBytes are looked at.
//   - An agent card (GET /a2a/{name}{card}, a 200 of at most
//     maxAgentCardBytes): its top-level "url" and the "url" of every
//     additionalInterfaces[] / supportedInterfaces[] entry become the
//     gateway's public URL for the agent (publicOrigin +
//     /a2a/{name}<path below the mount> for a URL of the agent's own
//     origin, else /a2a/{name}), patched in place: every other byte of
//     the card stays as the agent wrote it. A larger card, or one that
//     is not a JSON object, is relayed unchanged (logged).
//   - An error answer (4xx/5xx) of a target with configured headers (or
//     URL userinfo): those secret values (8 bytes or longer; also the
//     credential alone of a "<scheme> <credential>" value, and the Basic
//     credential derived from the userinfo) are replaced by [REDACTED]
//     in its first MiB and in every response header.

const (
	maxAgentCardBytes     = 1 << 20
	maxEndpointEventBytes = 64 << 10
	maxRedactedBodyBytes  = 1 << 20
	minRedactedSecret     = 8
)

// proxyPrefix is the gateway path of a target: /mcp/{name} or /a2a/{name}.
func proxyPrefix(t *targetRuntime) string {
	if t.kind == targetAgent {
		return "/a2a/" + t.name
	}
	return "/mcp/" + t.name
}

// proxiedPath maps ref (resolved against from, the upstream URL it came
// with) to the gateway path that reaches it: /{prefix}/{name}<path below
// the mount>?<query>. False when ref is of another origin, outside the
// mount, or (for a legacy server) the mount itself, which the proxy maps
// to the configured stream instead.
func proxiedPath(t *targetRuntime, from *url.URL, ref string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return "", false
	}
	u = from.ResolveReference(u)
	if !strings.EqualFold(u.Scheme, t.base.Scheme) || hostPort(u) != hostPort(t.base) {
		return "", false
	}
	mount := (&url.URL{Path: mountPath(t)}).EscapedPath()
	p := u.EscapedPath()
	if p != mount && !strings.HasPrefix(p, mount+"/") {
		return "", false
	}
	rel := p[len(mount):]
	if t.legacySSE && (rel == "" || rel == "/") {
		return "", false
	}
	out := proxyPrefix(t) + rel
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, true
}

// hostPort is u's host in lower case with its scheme's default port
// made explicit.
func hostPort(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}

// endpointRewriter is a legacy HTTP+SSE stream's body: it holds the
// stream back only until its first event is complete, rewrites that
// event when it is the endpoint event, then passes everything through.
type endpointRewriter struct {
	src     io.ReadCloser
	x       *targetExchange
	held    []byte // read, not yet scanned into out
	out     []byte // ready for the client
	buf     []byte
	passing bool
	err     error // the source's error, returned once out is drained
}

func (e *endpointRewriter) Close() error { return e.src.Close() }

func (e *endpointRewriter) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		if e.passing {
			if e.err != nil {
				return 0, e.err
			}
			return e.src.Read(p)
		}
		e.scan()
		if len(e.out) > 0 {
			break
		}
		if e.err != nil || len(e.held) > maxEndpointEventBytes {
			// The stream ended, or its first event is too large to be an
			// endpoint event: what was held goes as it came.
			e.passing = true
			e.out = e.held
			e.held = nil
			continue
		}
		if e.buf == nil {
			e.buf = make([]byte, 16<<10)
		}
		n, err := e.src.Read(e.buf)
		e.held = append(e.held, e.buf[:n]...)
		e.err = err
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

// scan moves the complete blocks of held to out: comment-only blocks as
// they are, the first event rewritten when it is the endpoint event,
// after which the rewriter passes everything through.
func (e *endpointRewriter) scan() {
	for {
		end := sseBlockEnd(e.held)
		if end < 0 {
			return
		}
		block := e.held[:end]
		rest := e.held[end:]
		if !sseHasField(block) {
			e.out = append(e.out, block...)
			e.held = rest
			continue
		}
		e.out = append(e.out, e.x.rewriteEndpoint(block)...)
		e.out = append(e.out, rest...)
		e.held = nil
		e.passing = true
		return
	}
}

// sseBlockEnd is the end of the first complete SSE block in data (after
// its blank line, as the SSE reader ends events: "\n\r\n" too), -1 when
// none is complete yet.
func sseBlockEnd(data []byte) int {
	if n := sse.EventLen(data); n > 0 {
		return n
	}
	return -1
}

// sseHasField reports whether a block holds a field line (not only
// comments and blank lines).
func sseHasField(block []byte) bool {
	lines := strings.Split(string(block), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSuffix(lines[i], "\r")
		if l != "" && l[0] != ':' {
			return true
		}
	}
	return false
}

// sseField splits a field line into its name and value (one leading
// space of the value dropped).
func sseField(line string) (string, string) {
	i := strings.IndexByte(line, ':')
	if i < 0 {
		return line, ""
	}
	return line[:i], strings.TrimPrefix(line[i+1:], " ")
}

// rewriteEndpoint is the first event of a legacy stream, its data
// rewritten when it is the endpoint event naming a URL the proxy
// reaches; otherwise the block unchanged.
func (x *targetExchange) rewriteEndpoint(block []byte) []byte {
	lines := strings.SplitAfter(string(block), "\n")
	event := ""
	dataLine := -1
	dataCount := 0
	for i := 0; i < len(lines); i++ {
		name, value := sseField(strings.TrimRight(lines[i], "\r\n"))
		switch name {
		case "event":
			event = value
		case "data":
			dataLine = i
			dataCount++
		}
	}
	if event != "endpoint" {
		return block
	}
	label := targetLabel(x.t.kind, x.t.name)
	if dataCount != 1 {
		x.c.g.log.warnf("%s: its endpoint event has %d data lines; relayed unchanged%s", label, dataCount, x.c.trace.logTail)
		return block
	}
	line := lines[dataLine]
	content := strings.TrimRight(line, "\r\n")
	_, value := sseField(content)
	mapped, ok := proxiedPath(x.t, x.target, value)
	if !ok {
		x.c.g.log.warnf("%s: its endpoint event names a URL outside the target's base path; relayed unchanged%s", label, x.c.trace.logTail)
		return block
	}
	lines[dataLine] = "data: " + mapped + line[len(content):]
	return []byte(strings.Join(lines, ""))
}

// rewriteCard reads an agent card (at most maxAgentCardBytes) and points
// its URLs at the gateway.
func (x *targetExchange) rewriteCard(resp *http.Response) {
	label := targetLabel(x.t.kind, x.t.name)
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxAgentCardBytes+1))
	if err != nil || len(head) > maxAgentCardBytes {
		if err == nil {
			x.c.g.log.warnf("%s: its agent card exceeds %d bytes; relayed unchanged%s", label, maxAgentCardBytes, x.c.trace.logTail)
		}
		resp.Body = &replayBody{r: io.MultiReader(bytes.NewReader(head), resp.Body), c: resp.Body}
		return
	}
	origin := publicOrigin(x.c)
	card := head
	ok := false
	if origin != "" {
		card, ok = patchAgentCard(head, func(ref string) string {
			if p, reached := proxiedPath(x.t, x.target, ref); reached {
				return origin + p
			}
			return origin + proxyPrefix(x.t)
		})
	}
	if !ok {
		x.c.g.log.warnf("%s: its agent card is not a JSON object (or the request names no usable host); relayed unchanged%s", label, x.c.trace.logTail)
		card = head
	}
	resp.Body = &replayBody{r: bytes.NewReader(card), c: resp.Body}
	resp.ContentLength = int64(len(card))
	resp.Header.Set("Content-Length", strconv.Itoa(len(card)))
}

// replayBody is a response body read from r and closed through c.
type replayBody struct {
	r io.Reader
	c io.Closer
}

func (b *replayBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *replayBody) Close() error               { return b.c.Close() }

// publicOrigin is the gateway's origin as the client reached it:
// "<scheme>://<host>" from the request's TLS state and Host, or from
// X-Forwarded-Proto / X-Forwarded-Host when the peer is one of
// trustedProxies; "" when the host is not a usable one.
func publicOrigin(c *call) string {
	r := c.r
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if trusted := c.g.cfg.trustedProxies; len(trusted) > 0 {
		peer, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			peer = r.RemoteAddr
		}
		if isTrustedProxy(peer, trusted) {
			if p := strings.ToLower(firstForwarded(r.Header.Get("X-Forwarded-Proto"))); p == "http" || p == "https" {
				scheme = p
			}
			if h := firstForwarded(r.Header.Get("X-Forwarded-Host")); validHost(h) {
				host = h
			}
		}
	}
	if !validHost(host) {
		return ""
	}
	return scheme + "://" + host
}

// firstForwarded is the first entry of a comma-separated forwarded header.
func firstForwarded(v string) string {
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// hostChars are the bytes of a host[:port] the card may name.
const hostChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]"

func validHost(h string) bool {
	return h != "" && len(h) <= 255 && strings.Trim(h, hostChars) == ""
}

// jsonMember is one member of a JSON object: its name and the span of
// its value in the document.
type jsonMember struct {
	name       string
	start, end int
}

// jsonSpan is a value's span in the document.
type jsonSpan struct{ start, end int }

// objectMembers lists the members of the JSON object data (at offset off
// in the document); false when data is not one.
func objectMembers(data []byte, off int) ([]jsonMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return nil, false
	}
	var out []jsonMember
	for dec.More() {
		tok, err = dec.Token()
		if err != nil {
			return nil, false
		}
		name, isName := tok.(string)
		if !isName {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		out = append(out, jsonMember{name: name, start: off + end - len(raw), end: off + end})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	return out, true
}

// arrayElements lists the element spans of the JSON array data (at
// offset off); false when data is not one.
func arrayElements(data []byte, off int) ([]jsonSpan, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '[' {
		return nil, false
	}
	var out []jsonSpan
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		out = append(out, jsonSpan{start: off + end - len(raw), end: off + end})
	}
	return out, true
}

// jsonPatch replaces a span of the document.
type jsonPatch struct {
	span  jsonSpan
	value []byte
}

// patchAgentCard rewrites the card's url fields with mapURL; false when
// the card is not a JSON object.
func patchAgentCard(card []byte, mapURL func(string) string) ([]byte, bool) {
	members, ok := objectMembers(card, 0)
	if !ok {
		return card, false
	}
	var patches []jsonPatch
	for i := 0; i < len(members); i++ {
		m := members[i]
		switch m.name {
		case "url":
			patches = appendURLPatch(patches, card, m, mapURL)
		case "additionalInterfaces", "supportedInterfaces":
			elems, isArray := arrayElements(card[m.start:m.end], m.start)
			if !isArray {
				continue
			}
			for j := 0; j < len(elems); j++ {
				fields, isObject := objectMembers(card[elems[j].start:elems[j].end], elems[j].start)
				for k := 0; isObject && k < len(fields); k++ {
					if fields[k].name == "url" {
						patches = appendURLPatch(patches, card, fields[k], mapURL)
					}
				}
			}
		}
	}
	if len(patches) == 0 {
		return card, true
	}
	var out bytes.Buffer
	at := 0
	for i := 0; i < len(patches); i++ {
		out.Write(card[at:patches[i].span.start])
		out.Write(patches[i].value)
		at = patches[i].span.end
	}
	out.Write(card[at:])
	return out.Bytes(), true
}

// appendURLPatch appends the patch of a url member holding a string.
func appendURLPatch(patches []jsonPatch, card []byte, m jsonMember, mapURL func(string) string) []jsonPatch {
	var s string
	if card[m.start] != '"' || json.Unmarshal(card[m.start:m.end], &s) != nil {
		return patches // not a string (null decodes into one too)
	}
	value, err := json.Marshal(mapURL(s))
	if err != nil {
		return patches
	}
	return append(patches, jsonPatch{span: jsonSpan{start: m.start, end: m.end}, value: value})
}

// targetSecrets are the secret values a target's answers must not
// carry back (those of minRedactedSecret bytes or more): its configured
// header values, and of a "<scheme> <credential>" value ("Bearer tok")
// the credential alone too (a server quoting the token it refused
// quotes it without the scheme); its URL's password and the Basic
// credential the proxy derives from the userinfo.
func targetSecrets(t *targetRuntime) []string {
	var out []string
	for _, vs := range t.header {
		for i := 0; i < len(vs); i++ {
			out = appendSecretValue(out, vs[i])
			if sp := strings.IndexByte(vs[i], ' '); sp > 0 {
				out = appendSecretValue(out, strings.TrimSpace(vs[i][sp+1:]))
			}
		}
	}
	if u := t.base.User; u != nil {
		pass, set := u.Password()
		if set {
			out = appendSecretValue(out, pass)
		}
		out = appendSecretValue(out, base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)))
	}
	return out
}

func appendSecretValue(out []string, v string) []string {
	if len(v) < minRedactedSecret {
		return out
	}
	return append(out, v)
}

// redactTargetSecrets replaces t's secrets in data (a backend's answer
// the gateway relays).
func redactTargetSecrets(data []byte, t *targetRuntime) []byte {
	secrets := targetSecrets(t)
	for i := 0; i < len(secrets); i++ {
		data = redactSecret(data, secrets[i])
	}
	return data
}

// redactTargetHeaders replaces secrets in every response header value.
func redactTargetHeaders(h http.Header, secrets []string) {
	for _, vs := range h {
		for i := 0; i < len(vs); i++ {
			for j := 0; j < len(secrets); j++ {
				vs[i] = strings.ReplaceAll(vs[i], secrets[j], "[REDACTED]")
			}
		}
	}
}

// redactTargetBody replaces secrets in the first maxRedactedBodyBytes of
// an error answer (the rest follows unscanned).
func redactTargetBody(resp *http.Response, secrets []string) {
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxRedactedBodyBytes))
	for i := 0; i < len(secrets); i++ {
		head = redactSecret(head, secrets[i])
	}
	resp.Body = &replayBody{r: io.MultiReader(bytes.NewReader(head), resp.Body), c: resp.Body}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}
