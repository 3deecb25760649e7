package gateway

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

// Limits on a multipart/form-data request (audio/transcriptions). The
// body itself is capped by the caller (maxMediaRequestBytes, 413).
const (
	maxMultipartParts      = 1000
	maxMultipartModelBytes = 64 << 10
)

// errMultipartMismatch is the log-only cause when the gateway's raw
// part scanner and mime/multipart split a body differently. The body is
// refused rather than forwarded with a guess.
var errMultipartMismatch = errors.New("multipart: raw part scan disagrees with mime/multipart")

// formPart is one part of a multipart body, as byte offsets into the
// original body: the raw header block (including the blank line that
// ends it) is raw[headerStart:bodyStart], the raw content (never
// transfer-decoded) raw[bodyStart:bodyEnd].
type formPart struct {
	headerStart, bodyStart, bodyEnd int
}

// multipartForm is a validated multipart/form-data body with exactly
// one "model" form field.
type multipartForm struct {
	raw   []byte
	parts []formPart
	model int // index into parts of the "model" field
}

// transcriptionModel returns the value of the one "model" form field of
// a multipart/form-data request body (the whole body, already read and
// capped by the caller). The field may be any part. The value is
// returned exactly as sent (not trimmed); an empty value, a second
// "model" field, a case variant such as "Model", or a model part with a
// filename or a Content-Transfer-Encoding is a 400, as is a body that
// is not complete, well-formed multipart: a truncated body (no closing
// boundary) never passes, because a valid prefix would forward cut-off
// audio.
//
// The body is split twice, once by mime/multipart and once by a raw
// scanner over the boundary delimiters, and refused unless both agree
// part for part; rewriteMultipartModel relies on that.
func transcriptionModel(contentType string, body []byte) (string, *apiError) {
	form, e := parseMultipartForm(contentType, body)
	if e != nil {
		return "", e
	}
	return string(form.value(form.model)), nil
}

// rewriteMultipartModel returns body with the "model" form field's value
// replaced by model, under a fresh random boundary, and the matching
// Content-Type. Every other part, and the model part's header block,
// is copied byte for byte (headers in their original order and
// spelling, content binary-safe and never transfer-decoded); parts keep
// their order; the preamble and epilogue, which carry no data, are
// dropped. It validates body exactly as transcriptionModel does.
//
// Callers replay the original body unchanged when the client's model
// already equals the upstream model id; this is only for the case where
// it does not.
func rewriteMultipartModel(contentType string, body []byte, model string) ([]byte, string, *apiError) {
	form, e := parseMultipartForm(contentType, body)
	if e != nil {
		return nil, "", e
	}
	boundary, err := newMultipartBoundary(body, model)
	if err != nil {
		e := apierr.New(http.StatusInternalServerError, "server_error", "internal_error",
			"could not build the multipart request body")
		e.Cause = err
		return nil, "", e
	}
	size := len(body) + len(model) + (len(form.parts)+1)*(len(boundary)+8)
	out := make([]byte, 0, size)
	for i := 0; i < len(form.parts); i++ {
		p := form.parts[i]
		out = append(out, "--"...)
		out = append(out, boundary...)
		out = append(out, "\r\n"...)
		out = append(out, body[p.headerStart:p.bodyStart]...)
		if i == form.model {
			out = append(out, model...)
		} else {
			out = append(out, body[p.bodyStart:p.bodyEnd]...)
		}
		out = append(out, "\r\n"...)
	}
	out = append(out, "--"...)
	out = append(out, boundary...)
	out = append(out, "--\r\n"...)
	return out, "multipart/form-data; boundary=" + boundary, nil
}

// newMultipartBoundary returns a random boundary that occurs nowhere in
// body or model, so no delimiter can appear inside a copied part.
func newMultipartBoundary(body []byte, model string) (string, error) {
	var buf [16]byte
	for try := 0; try < 8; try++ {
		if _, err := io.ReadFull(rand.Reader, buf[:]); err != nil {
			return "", err
		}
		b := hex.EncodeToString(buf[:])
		if !bytes.Contains(body, []byte(b)) && !strings.Contains(model, b) {
			return b, nil
		}
	}
	return "", errors.New("multipart: no unused boundary found")
}

func (f *multipartForm) value(i int) []byte {
	p := f.parts[i]
	return f.raw[p.bodyStart:p.bodyEnd]
}

func errInvalidMultipart(message string, cause error) *apiError {
	e := apierr.BadRequest("invalid_multipart", message)
	e.Cause = cause
	return e
}

// multipartBoundary returns the boundary of a multipart/form-data
// Content-Type, which must be 1-70 RFC 2046 boundary characters.
func multipartBoundary(contentType string) (string, *apiError) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "multipart/form-data" {
		return "", apierr.BadRequest("invalid_content_type",
			"request body must be multipart/form-data (Content-Type: multipart/form-data; boundary=...)")
	}
	boundary, ok := params["boundary"]
	if !ok || !validBoundary(boundary) {
		return "", apierr.BadRequest("invalid_content_type",
			"multipart/form-data Content-Type needs a boundary of 1 to 70 characters")
	}
	return boundary, nil
}

// validBoundary reports whether b is a valid RFC 2046 boundary: 1-70
// bchars, where a space may not be last.
func validBoundary(b string) bool {
	if len(b) < 1 || len(b) > 70 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			continue
		}
		switch c {
		case '\'', '(', ')', '+', '_', ',', '-', '.', '/', ':', '=', '?':
			continue
		case ' ':
			if i != len(b)-1 {
				continue
			}
		}
		return false
	}
	return true
}

// parseMultipartForm splits body with mime/multipart and with the raw
// scanner in lockstep, requires identical parts (parsed headers and raw
// content), and locates the one "model" field.
func parseMultipartForm(contentType string, body []byte) (*multipartForm, *apiError) {
	boundary, e := multipartBoundary(contentType)
	if e != nil {
		return nil, e
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	sc := newPartScanner(body, boundary)
	form := &multipartForm{raw: body, model: -1}
	buf := make([]byte, 32<<10)
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			_, state := sc.next()
			if state == scanError {
				// mime/multipart ends quietly at a delimiter line with
				// nothing after it; such a body was cut short.
				return nil, errInvalidMultipart("multipart body ends without its closing boundary", nil)
			}
			if state != scanEnd {
				return nil, errInvalidMultipart("request body is not a valid multipart/form-data body", errMultipartMismatch)
			}
			break
		}
		if err != nil {
			return nil, errInvalidMultipart("request body is not a valid multipart/form-data body", err)
		}
		if len(form.parts) == maxMultipartParts {
			return nil, errInvalidMultipart("multipart body has more than "+strconv.Itoa(maxMultipartParts)+" parts", nil)
		}
		fp, state := sc.next()
		var raw []byte
		if state == scanPart {
			raw = body[fp.bodyStart:fp.bodyEnd]
		}
		same, err := readEqual(part, raw, buf)
		if err != nil {
			return nil, errInvalidMultipart("request body is not a valid multipart/form-data body", err)
		}
		if state != scanPart || !same || !sameHeader(part.Header, body[fp.headerStart:fp.bodyStart]) {
			return nil, errInvalidMultipart("request body is not a valid multipart/form-data body", errMultipartMismatch)
		}
		form.parts = append(form.parts, fp)
		if e := form.checkPart(len(form.parts)-1, part.Header); e != nil {
			return nil, e
		}
	}
	if form.model < 0 || form.parts[form.model].bodyEnd == form.parts[form.model].bodyStart {
		return nil, apierr.BadRequest("missing_model", `multipart body needs a non-empty "model" form field`)
	}
	return form, nil
}

// checkPart validates part i's Content-Disposition and, when it is the
// model field, the field itself.
func (f *multipartForm) checkPart(i int, h textproto.MIMEHeader) *apiError {
	n := strconv.Itoa(i + 1)
	cd := h.Values("Content-Disposition")
	if len(cd) == 0 {
		return nil
	}
	if len(cd) > 1 {
		return errInvalidMultipart("multipart part "+n+" has more than one Content-Disposition header", nil)
	}
	disposition, params, err := mime.ParseMediaType(cd[0])
	if err != nil {
		return errInvalidMultipart("multipart part "+n+" has a malformed Content-Disposition header", err)
	}
	name, ok := params["name"]
	if !ok || !strings.EqualFold(name, "model") {
		return nil
	}
	if name != "model" {
		return apierr.BadRequest("invalid_request", `multipart body has a "`+name+`" field; the model field is spelled "model"`)
	}
	if f.model >= 0 {
		return apierr.BadRequest("duplicate_model", `multipart body has more than one "model" form field`)
	}
	f.model = i
	_, hasFilename := params["filename"]
	_, hasFilenameExt := params["filename*"]
	if disposition != "form-data" || hasFilename || hasFilenameExt {
		return apierr.BadRequest("invalid_model", `the "model" field must be a plain form-data field, not a file`)
	}
	if len(h.Values("Content-Length")) > 0 {
		return apierr.BadRequest("invalid_model", `the "model" form field must not carry a Content-Length header`)
	}
	cte := h.Values("Content-Transfer-Encoding")
	for j := 0; j < len(cte); j++ {
		switch strings.ToLower(strings.TrimSpace(cte[j])) {
		case "7bit", "8bit", "binary":
		default:
			return apierr.BadRequest("invalid_model", `the "model" form field must not use a Content-Transfer-Encoding`)
		}
	}
	if len(f.value(i)) > maxMultipartModelBytes {
		return apierr.BadRequest("invalid_model", `the "model" form field exceeds `+formatBytes(maxMultipartModelBytes))
	}
	return nil
}

// readEqual drains r, reporting whether it yielded exactly want. A read
// error (a truncated part) is returned even after a mismatch.
func readEqual(r io.Reader, want, buf []byte) (bool, error) {
	equal := true
	off := 0
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if equal && (off+n > len(want) || !bytes.Equal(buf[:n], want[off:off+n])) {
				equal = false
			}
			off += n
		}
		if err == io.EOF {
			return equal && off == len(want), nil
		}
		if err != nil {
			return false, err
		}
	}
}

// sameHeader reports whether the raw header block parses to h.
func sameHeader(h textproto.MIMEHeader, raw []byte) bool {
	got, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if err != nil || len(got) != len(h) {
		return false
	}
	for k, want := range h {
		have := got[k]
		if len(have) != len(want) {
			return false
		}
		for i := 0; i < len(want); i++ {
			if have[i] != want[i] {
				return false
			}
		}
	}
	return true
}

// Results of partScanner.next.
const (
	scanPart = iota
	scanEnd
	scanError
)

// partScanner splits a multipart body by its boundary delimiters,
// following mime/multipart's rules (transport padding after a boundary,
// LF-only line endings when the first delimiter line ends in a bare LF,
// an empty part whose header block runs straight into the next
// delimiter) but yielding byte offsets instead of parsed parts.
type partScanner struct {
	data     []byte
	pos      int
	dash     []byte // "--" boundary
	dashDash []byte // "--" boundary "--"
	nl       []byte // "\r\n", or "\n" in LF-only mode
	nlDash   []byte // nl "--" boundary
	parts    int
}

func newPartScanner(data []byte, boundary string) *partScanner {
	b := []byte("\r\n--" + boundary + "--")
	return &partScanner{
		data:     data,
		nl:       b[:2],
		nlDash:   b[:len(b)-2],
		dashDash: b[2:],
		dash:     b[2 : len(b)-2],
	}
}

// next scans the next part, or the close delimiter (scanEnd).
func (s *partScanner) next() (formPart, int) {
	expectNewPart := false
	for {
		if s.parts == 0 {
			s.skipPreamble()
		}
		line, eof := s.readLine()
		if eof {
			if s.isFinal(line) {
				return formPart{}, scanEnd
			}
			return formPart{}, scanError
		}
		if s.isDelimiter(line) {
			s.parts++
			return s.readPart()
		}
		if s.isFinal(line) {
			return formPart{}, scanEnd
		}
		switch {
		case expectNewPart:
			return formPart{}, scanError
		case s.parts == 0:
			// A preamble line that starts like a delimiter but is not one.
		case bytes.Equal(line, s.nl):
			// The line break that ends the previous part's content.
			expectNewPart = true
		default:
			return formPart{}, scanError
		}
	}
}

// skipPreamble moves to the next line that starts with the delimiter;
// no other preamble line matters.
func (s *partScanner) skipPreamble() {
	rest := s.data[s.pos:]
	if bytes.HasPrefix(rest, s.dash) {
		return
	}
	lfDash := s.nlDash[len(s.nlDash)-len(s.dash)-1:] // "\n--boundary"
	i := bytes.Index(rest, lfDash)
	if i < 0 {
		s.pos = len(s.data)
		return
	}
	s.pos += i + 1
}

// readLine returns the line at pos including its '\n', or the rest of
// the data and eof when there is no '\n'.
func (s *partScanner) readLine() ([]byte, bool) {
	rest := s.data[s.pos:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		s.pos = len(s.data)
		return rest, true
	}
	s.pos += i + 1
	return rest[:i+1], false
}

func (s *partScanner) isFinal(line []byte) bool {
	if !bytes.HasPrefix(line, s.dashDash) {
		return false
	}
	rest := skipLWSP(line[len(s.dashDash):])
	return len(rest) == 0 || bytes.Equal(rest, s.nl)
}

func (s *partScanner) isDelimiter(line []byte) bool {
	if !bytes.HasPrefix(line, s.dash) {
		return false
	}
	rest := skipLWSP(line[len(s.dash):])
	if s.parts == 0 && len(rest) == 1 && rest[0] == '\n' {
		s.nl = s.nl[1:]
		s.nlDash = s.nlDash[1:]
	}
	return bytes.Equal(rest, s.nl)
}

func skipLWSP(b []byte) []byte {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return b[i:]
}

// readPart scans the header block and content of the part starting at
// pos (just past its delimiter line).
func (s *partScanner) readPart() (formPart, int) {
	p := formPart{headerStart: s.pos}
	rest := s.data[s.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("\r\n")):
		p.bodyStart = s.pos + 2
	case bytes.HasPrefix(rest, []byte("\n")):
		p.bodyStart = s.pos + 1
	default:
		crlf := bytes.Index(rest, []byte("\n\r\n"))
		lf := bytes.Index(rest, []byte("\n\n"))
		switch {
		case crlf >= 0 && (lf < 0 || crlf < lf):
			p.bodyStart = s.pos + crlf + 3
		case lf >= 0:
			p.bodyStart = s.pos + lf + 2
		default:
			return p, scanError
		}
	}
	i := p.bodyStart
	if bytes.HasPrefix(s.data[i:], s.dash) {
		// A part with no content: the header block runs straight into
		// the next delimiter.
		if matchAfterDelimiter(s.data[i:], s.dash) {
			p.bodyEnd = i
			s.pos = i
			return p, scanPart
		}
		i += len(s.dash)
	}
	for {
		j := bytes.Index(s.data[i:], s.nlDash)
		if j < 0 {
			return p, scanError
		}
		if matchAfterDelimiter(s.data[i+j:], s.nlDash) {
			p.bodyEnd = i + j
			s.pos = i + j
			return p, scanPart
		}
		i += j + len(s.nlDash)
	}
}

// matchAfterDelimiter reports whether buf, which starts with prefix,
// ends a part there: prefix is followed by the end of the data,
// whitespace, or "--".
func matchAfterDelimiter(buf, prefix []byte) bool {
	if len(buf) == len(prefix) {
		return true
	}
	switch buf[len(prefix)] {
	case ' ', '\t', '\r', '\n':
		return true
	case '-':
		return len(buf) > len(prefix)+1 && buf[len(prefix)+1] == '-'
	}
	return false
}
