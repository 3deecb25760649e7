package gateway

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// closingBody is a client's request body as an HTTP/1 server without
// full duplex leaves it once the answer's headers are written: its bytes,
// then — closed under the reader — an error for any further read.
type closingBody struct {
	data  []byte
	reads int // reads after the data was given
}

var errClosedUnderReader = errors.New("http: invalid Read on closed Body")

func (b *closingBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		b.reads++
		return 0, errClosedUnderReader
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// TestCappedBodyStopsAtDeclaredLength: once a body of declared length
// has given its bytes, the transport's check that nothing follows gets
// io.EOF from the passthrough body itself, never a read of the client's
// body (which the server may have closed by then: the upstream
// connection, and the answer on it, would be torn down). A body of
// unknown length is read to its end as before.
func TestCappedBodyStopsAtDeclaredLength(t *testing.T) {
	const payload = `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`
	src := &closingBody{data: []byte(payload)}
	r := httptest.NewRequest(http.MethodPost, "/mcp/fake/", nil)
	r.Body = io.NopCloser(src)
	r.ContentLength = int64(len(payload))
	body := newCappedBody(r, nil)
	// As the transport reads it: the declared length, then once more.
	got, err := io.ReadAll(io.LimitReader(body, r.ContentLength))
	if err != nil || string(got) != payload {
		t.Fatalf("the declared bytes: %q, %v", got, err)
	}
	n, err := body.Read(make([]byte, 64))
	if n != 0 || err != io.EOF {
		t.Fatalf("the read past the declared length: %d, %v; want 0, io.EOF", n, err)
	}
	if src.reads != 0 {
		t.Fatalf("the client's body was read %d times past its declared length", src.reads)
	}

	src = &closingBody{data: []byte(payload)}
	r.Body = io.NopCloser(src)
	r.ContentLength = -1
	body = newCappedBody(r, nil)
	got, err = io.ReadAll(body)
	if !errors.Is(err, errClosedUnderReader) || string(got) != payload {
		t.Fatalf("a body of unknown length: %q, %v; want its bytes, then its own error", got, err)
	}

	r.Body = io.NopCloser(&closingBody{})
	r.ContentLength = 0
	if n, err := newCappedBody(r, nil).Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("an empty declared body: %d, %v; want 0, io.EOF", n, err)
	}
}
