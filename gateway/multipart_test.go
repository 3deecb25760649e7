package gateway

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"
)

// mpPart is one part of a hand-built multipart body: its raw header
// block (ending in the blank line) and its raw content.
type mpPart struct {
	header, body string
}

// mpField is a form-data field's header block.
func mpField(name, nl string) string {
	return `Content-Disposition: form-data; name="` + name + `"` + nl + nl
}

// buildMultipart joins parts under boundary with line ending nl.
func buildMultipart(boundary, nl, preamble, epilogue string, parts []mpPart) []byte {
	var b bytes.Buffer
	b.WriteString(preamble)
	for i := 0; i < len(parts); i++ {
		b.WriteString("--" + boundary + nl)
		b.WriteString(parts[i].header)
		b.WriteString(parts[i].body)
		b.WriteString(nl)
	}
	b.WriteString("--" + boundary + "--" + nl)
	b.WriteString(epilogue)
	return b.Bytes()
}

func mpContentType(boundary string) string {
	return mime.FormatMediaType("multipart/form-data", map[string]string{"boundary": boundary})
}

const mpBoundary = "----gw-test-Boundary7MA4YWxkTrZu0gW"

// mpAudio is binary content full of delimiter lookalikes: the boundary
// after a bare LF, followed by a non-delimiter byte, prefixed, and NULs.
var mpAudio = "RIFF\x00\x00\x00\x00WAVEfmt \x00\r\n--" + mpBoundary + "X\x00" +
	"\r\n--" + mpBoundary + "-x\n--" + mpBoundary + "\r\n\xff\xfe\x00" +
	"\r\n-- " + mpBoundary + "\r\n--\r\n\r\n\x00--" + mpBoundary + "--\x00\r\n"

func mpFile(nl string) mpPart {
	return mpPart{
		`Content-Disposition: form-data; name="file"; filename="a b.wav"` + nl +
			"Content-Type: audio/wav" + nl + "X-Custom:  kept  as sent" + nl + nl,
		mpAudio,
	}
}

// mpCase is a valid body whose model field is parts[model].
type mpCase struct {
	name                 string
	boundary, nl         string
	preamble, epilogue   string
	parts                []mpPart
	model                int
	wantModel            string
	customBody, wantBody []byte // hand-built body, and its rewrite
}

func (c mpCase) body() []byte {
	if c.customBody != nil {
		return c.customBody
	}
	return buildMultipart(c.boundary, c.nl, c.preamble, c.epilogue, c.parts)
}

// rewritten is the exact body rewriteMultipartModel must produce under
// boundary nb.
func (c mpCase) rewritten(nb, model string) []byte {
	if c.wantBody != nil {
		out := bytes.ReplaceAll(c.wantBody, []byte("NEWBOUNDARY"), []byte(nb))
		return bytes.ReplaceAll(out, []byte("NEWMODEL"), []byte(model))
	}
	parts := make([]mpPart, len(c.parts))
	copy(parts, c.parts)
	parts[c.model].body = model
	return buildMultipart(nb, "\r\n", "", "", parts)
}

func mpValidCases() []mpCase {
	b := mpBoundary
	crlf := "\r\n"
	model := mpPart{mpField("model", crlf), "whisper-1"}
	lang := mpPart{mpField("language", crlf), "en"}
	qp := mpPart{`Content-Disposition: form-data; name="prompt"` + crlf +
		"Content-Type: text/plain; charset=utf-8" + crlf +
		"Content-Transfer-Encoding: quoted-printable" + crlf + crlf, "caf=C3=A9 =\r\n--" + b + "=3D"}
	folded := mpPart{"content-disposition: form-data;\r\n name=\"temperature\"\r\nx-a: 1\r\nX-A: 2\r\n\r\n", "0.2"}
	cases := []mpCase{
		{name: "model_first", parts: []mpPart{model, mpFile(crlf), lang}, model: 0},
		{name: "model_middle", parts: []mpPart{mpFile(crlf), model, lang}, model: 1},
		{name: "model_last", parts: []mpPart{lang, mpFile(crlf), model}, model: 2},
		{name: "model_only", parts: []mpPart{model}, model: 0},
		{name: "quoted_printable_part", parts: []mpPart{qp, model}, model: 1},
		{name: "folded_and_repeated_headers", parts: []mpPart{folded, model, mpFile(crlf)}, model: 1},
		{name: "preamble_and_epilogue", preamble: "This is a preamble.\r\n--" + b + "x is not a delimiter\r\n\r\n",
			epilogue: "epilogue\r\n--" + b + "\r\nignored", parts: []mpPart{mpFile(crlf), model}, model: 1},
		{name: "model_not_trimmed", parts: []mpPart{{mpField("model", crlf), " whisper-1 "}}, model: 0, wantModel: " whisper-1 "},
		{name: "model_binary_safe", parts: []mpPart{{mpField("model", crlf), "a\x00b\r\nc"}}, model: 0, wantModel: "a\x00b\r\nc"},
		{name: "model_64KiB", parts: []mpPart{{mpField("model", crlf), strings.Repeat("m", maxMultipartModelBytes)}}, model: 0,
			wantModel: strings.Repeat("m", maxMultipartModelBytes)},
		{name: "model_8bit", parts: []mpPart{{"Content-Disposition: form-data; name=model\r\nContent-Transfer-Encoding: 8bit\r\nContent-Type: text/plain\r\n\r\n", "whisper-1"}}, model: 0},
		{name: "empty_and_headerless_parts", parts: []mpPart{{mpField("empty", crlf), ""}, {crlf, "no headers"}, model}, model: 2},
		{name: "content_starts_with_boundary", parts: []mpPart{{mpField("x", crlf), "--" + b + "X rest"}, model}, model: 1},
		// LF-only line endings (accepted, as mime/multipart does, when
		// the first delimiter line ends in a bare LF). Here "\n--B" is a
		// delimiter, so the file content may not contain it.
		{name: "lf_only", nl: "\n", parts: []mpPart{
			{mpFile("\n").header, "\x00\r\n--" + b + "X\r\n\xff--" + b + "\n\r\n-" + b},
			{mpField("model", "\n"), "whisper-1"},
		}, model: 1},
		{name: "bchars_boundary", boundary: "'()+_,-./:=? x", parts: []mpPart{model, lang}, model: 0},
		{name: "one_char_boundary", boundary: "a", parts: []mpPart{{mpField("x", crlf), "a-a\r\n-a\r\n--ab"}, model}, model: 1},
		{name: "rfc2231_name", parts: []mpPart{{"Content-Disposition: form-data; name*=UTF-8''model\r\n\r\n", "whisper-1"}}, model: 0},
		{
			name: "padding_and_unterminated_close",
			customBody: []byte("--" + b + " \t\r\n" + mpField("model", crlf) + "whisper-1\r\n--" + b + "\t\r\n" +
				mpField("language", crlf) + "en\r\n--" + b + "-- "),
			wantBody: []byte("--NEWBOUNDARY\r\n" + mpField("model", crlf) + "NEWMODEL\r\n--NEWBOUNDARY\r\n" +
				mpField("language", crlf) + "en\r\n--NEWBOUNDARY--\r\n"),
		},
		{
			// A part with no content whose header block runs straight
			// into the next delimiter.
			name: "header_block_into_delimiter",
			customBody: []byte("--" + b + "\r\n" + mpField("empty", crlf) + "--" + b + "\r\n" +
				mpField("model", crlf) + "whisper-1\r\n--" + b + "--\r\n"),
			wantBody: []byte("--NEWBOUNDARY\r\n" + mpField("empty", crlf) + "\r\n--NEWBOUNDARY\r\n" +
				mpField("model", crlf) + "NEWMODEL\r\n--NEWBOUNDARY--\r\n"),
		},
	}
	for i := 0; i < len(cases); i++ {
		c := &cases[i]
		if c.boundary == "" {
			c.boundary = b
		}
		if c.nl == "" {
			c.nl = crlf
		}
		if c.wantModel == "" {
			c.wantModel = "whisper-1"
		}
	}
	return cases
}

func TestTranscriptionModelValid(t *testing.T) {
	cases := mpValidCases()
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			model, e := transcriptionModel(mpContentType(c.boundary), c.body())
			if e != nil {
				t.Fatalf("refused: %d %s: %v", e.Status, e.Code, e)
			}
			if model != c.wantModel {
				t.Fatalf("model %q, want %q", model, c.wantModel)
			}
		})
	}
}

func TestTranscriptionModelContentType(t *testing.T) {
	body := buildMultipart("B", "\r\n", "", "", []mpPart{{mpField("model", "\r\n"), "m"}})
	cases := []struct {
		name, ct string
		ok       bool
	}{
		{"form_data", "multipart/form-data; boundary=B", true},
		{"case_insensitive_type", "Multipart/Form-Data; Boundary=\"B\"", true},
		{"json", "application/json", false},
		{"empty", "", false},
		{"no_boundary", "multipart/form-data", false},
		{"empty_boundary", `multipart/form-data; boundary=""`, false},
		{"mixed", "multipart/mixed; boundary=B", false},
		{"malformed", "multipart/form-data; boundary", false},
		{"duplicate_boundary", "multipart/form-data; boundary=B; boundary=C", false},
		{"boundary_too_long", "multipart/form-data; boundary=" + strings.Repeat("B", 71), false},
		{"boundary_trailing_space", `multipart/form-data; boundary="B "`, false},
		{"boundary_bad_char", `multipart/form-data; boundary="B@"`, false},
		{"boundary_crlf", "multipart/form-data; boundary=\"B\r\n\"", false},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			model, e := transcriptionModel(c.ct, body)
			if c.ok {
				if e != nil || model != "m" {
					t.Fatalf("got %q, %v", model, e)
				}
				return
			}
			if e == nil || e.Status != 400 || e.Code != "invalid_content_type" {
				t.Fatalf("got %q, %+v; want 400 invalid_content_type", model, e)
			}
		})
	}
	if _, e := transcriptionModel(mpContentType(strings.Repeat("B", 70)),
		buildMultipart(strings.Repeat("B", 70), "\r\n", "", "", []mpPart{{mpField("model", "\r\n"), "m"}})); e != nil {
		t.Fatalf("70-character boundary refused: %v", e)
	}
}

func TestTranscriptionModelRefusals(t *testing.T) {
	b := mpBoundary
	crlf := "\r\n"
	model := mpPart{mpField("model", crlf), "whisper-1"}
	build := func(parts ...mpPart) []byte { return buildMultipart(b, crlf, "", "", parts) }
	manyParts := make([]mpPart, maxMultipartParts)
	for i := 0; i < len(manyParts); i++ {
		manyParts[i] = mpPart{mpField("f", crlf), "v"}
	}
	manyParts[0] = model
	cases := []struct {
		name string
		body []byte
		code string
	}{
		{"two_models", build(model, mpFile(crlf), mpPart{mpField("model", crlf), "gpt-4o-transcribe"}), "duplicate_model"},
		{"two_models_same_value", build(model, model), "duplicate_model"},
		{"missing", build(mpFile(crlf), mpPart{mpField("language", crlf), "en"}), "missing_model"},
		{"empty_value", build(mpPart{mpField("model", crlf), ""}), "missing_model"},
		{"no_parts", []byte("--" + b + "--\r\n"), "missing_model"},
		{"case_variant", build(mpPart{mpField("Model", crlf), "whisper-1"}), "invalid_request"},
		{"case_variant_and_model", build(model, mpPart{mpField("MODEL", crlf), "x"}), "invalid_request"},
		{"model_is_file", build(mpPart{`Content-Disposition: form-data; name="model"; filename="m.txt"` + crlf + crlf, "whisper-1"}), "invalid_model"},
		{"model_not_form_data", build(mpPart{`Content-Disposition: attachment; name="model"` + crlf + crlf, "whisper-1"}), "invalid_model"},
		{"model_quoted_printable", build(mpPart{mpField("model", crlf)[:len(mpField("model", crlf))-2] + "Content-Transfer-Encoding: quoted-printable\r\n\r\n", "whisper=2D1"}), "invalid_model"},
		{"model_base64", build(mpPart{"Content-Transfer-Encoding: base64\r\n" + mpField("model", crlf), "d2hpc3Blci0x"}), "invalid_model"},
		{"model_content_length", build(mpPart{"Content-Length: 9\r\n" + mpField("model", crlf), "whisper-1"}), "invalid_model"},
		{"model_too_long", build(mpPart{mpField("model", crlf), strings.Repeat("m", maxMultipartModelBytes+1)}), "invalid_model"},
		{"two_content_dispositions", build(mpPart{`Content-Disposition: form-data; name="file"` + crlf + mpField("model", crlf), "x"}, model), "invalid_multipart"},
		{"malformed_content_disposition", build(mpPart{`Content-Disposition: form-data; name="file"; name="model"` + crlf + crlf, "x"}, model), "invalid_multipart"},
		{"too_many_parts", build(append(manyParts, mpPart{mpField("f", crlf), "v"})...), "invalid_multipart"},
		{"empty_body", nil, "invalid_multipart"},
		{"not_multipart", []byte(`{"model":"whisper-1"}`), "invalid_multipart"},
		{"other_boundary", buildMultipart("other", crlf, "", "", []mpPart{model}), "invalid_multipart"},
		{"no_close_delimiter", []byte("--" + b + "\r\n" + mpField("model", crlf) + "whisper-1\r\n"), "invalid_multipart"},
		{"delimiter_then_eof", []byte("--" + b + "\r\n" + mpField("model", crlf) + "whisper-1\r\n--" + b + "\r\n"), "invalid_multipart"},
		{"delimiter_then_eof_lf", []byte("--" + b + "\n" + mpField("model", "\n") + "whisper-1\n--" + b + "\n"), "invalid_multipart"},
		{"junk_after_delimiter", []byte("--" + b + "\r\n" + mpField("model", crlf) + "whisper-1\r\n--" + b + " junk\r\n--" + b + "--\r\n"), "invalid_multipart"},
		{"junk_after_close", []byte("--" + b + "\r\n" + mpField("model", crlf) + "whisper-1\r\n--" + b + "--junk\r\n"), "invalid_multipart"},
		{"no_blank_line", []byte("--" + b + "\r\n" + `Content-Disposition: form-data; name="model"` + "\r\n--" + b + "--\r\n"), "invalid_multipart"},
		{"malformed_header", build(mpPart{"not a header\r\n\r\n", "x"}, model), "invalid_multipart"},
		{"leading_continuation", build(mpPart{" x: y\r\n" + mpField("f", crlf), "x"}, model), "invalid_multipart"},
		{"lf_body_crlf_delimiters", []byte("--" + b + "\n" + mpField("model", "\n") + "whisper-1\r\n--" + b + "--\r\n"), "invalid_multipart"},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			model, e := transcriptionModel(mpContentType(b), c.body)
			if e == nil || e.Status != 400 || e.Code != c.code {
				t.Fatalf("got %q, %+v; want 400 %s", model, e, c.code)
			}
			if e.Cause == errMultipartMismatch {
				t.Fatalf("scanner disagreed with mime/multipart")
			}
			out, _, re := rewriteMultipartModel(mpContentType(b), c.body, "x")
			if re == nil || re.Status != 400 || re.Code != c.code || out != nil {
				t.Fatalf("rewrite: got %q, %+v; want 400 %s", out, re, c.code)
			}
		})
	}
	// The part limit is inclusive.
	if m, e := transcriptionModel(mpContentType(b), build(manyParts...)); e != nil || m != "whisper-1" {
		t.Fatalf("%d parts: %q, %v", maxMultipartParts, m, e)
	}
}

// TestTranscriptionModelTruncated cuts valid bodies at every byte: only
// dropping the line break after the close delimiter leaves a valid body.
func TestTranscriptionModelTruncated(t *testing.T) {
	cases := mpValidCases()
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		if c.epilogue != "" || c.customBody != nil || len(c.body()) > 4096 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			ct := mpContentType(c.boundary)
			body := c.body()
			end := len(body) - len(c.nl)
			for cut := 0; cut < end; cut++ {
				model, e := transcriptionModel(ct, body[:cut])
				if e == nil || e.Status != 400 || e.Code != "invalid_multipart" {
					t.Fatalf("cut at %d/%d: got %q, %+v; want 400 invalid_multipart", cut, len(body), model, e)
				}
			}
			if model, e := transcriptionModel(ct, body[:end]); e != nil || model != c.wantModel {
				t.Fatalf("close delimiter without its line break: %q, %v", model, e)
			}
		})
	}
}

// rawPart is a part as mime/multipart reads it, without transfer
// decoding.
type rawPart struct {
	header textproto.MIMEHeader
	name   string
	body   []byte
}

// readRawParts splits body with mime/multipart alone.
func readRawParts(contentType string, body []byte) ([]rawPart, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, err
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var parts []rawPart
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		parts = append(parts, rawPart{header: p.Header, name: p.FormName(), body: data})
	}
}

// checkRewrite asserts that out (under outCT) has the parts of body
// (under ct) with only the model field's value changed to model.
func checkRewrite(t *testing.T, ct string, body []byte, outCT string, out []byte, model string) {
	t.Helper()
	in, err := readRawParts(ct, body)
	if err != nil {
		t.Fatalf("original does not parse: %v", err)
	}
	got, err := readRawParts(outCT, out)
	if err != nil {
		t.Fatalf("rewrite does not parse: %v\n%q", err, out)
	}
	if len(got) != len(in) {
		t.Fatalf("rewrite has %d parts, want %d", len(got), len(in))
	}
	models := 0
	for i := 0; i < len(in); i++ {
		if !sameHeaderMaps(got[i].header, in[i].header) {
			t.Fatalf("part %d header %v, want %v", i, got[i].header, in[i].header)
		}
		want := in[i].body
		if in[i].name == "model" {
			models++
			want = []byte(model)
		}
		if !bytes.Equal(got[i].body, want) {
			t.Fatalf("part %d (%q) content %q, want %q", i, in[i].name, got[i].body, want)
		}
	}
	if models != 1 {
		t.Fatalf("%d model parts", models)
	}
	if m, e := transcriptionModel(outCT, out); e != nil || m != model {
		t.Fatalf("rewrite's model %q, %v; want %q", m, e, model)
	}
	_, oldParams, _ := mime.ParseMediaType(ct)
	mediaType, params, err := mime.ParseMediaType(outCT)
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == oldParams["boundary"] {
		t.Fatalf("rewrite Content-Type %q (was %q)", outCT, ct)
	}
}

func sameHeaderMaps(a, b textproto.MIMEHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := 0; i < len(av); i++ {
			if av[i] != bv[i] {
				return false
			}
		}
	}
	return true
}

func TestRewriteMultipartModel(t *testing.T) {
	cases := mpValidCases()
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			ct := mpContentType(c.boundary)
			body := c.body()
			orig := append([]byte(nil), body...)
			const newModel = " openai/whisper-1\t\r\n"
			out, outCT, e := rewriteMultipartModel(ct, body, newModel)
			if e != nil {
				t.Fatalf("refused: %v", e)
			}
			if !bytes.Equal(body, orig) {
				t.Fatal("rewrite modified its input")
			}
			_, params, _ := mime.ParseMediaType(outCT)
			nb := params["boundary"]
			if len(nb) != 32 || outCT != "multipart/form-data; boundary="+nb {
				t.Fatalf("Content-Type %q", outCT)
			}
			// Byte-exact: every header block and every other part's
			// content as sent, CRLF framing under the new boundary.
			if want := c.rewritten(nb, newModel); !bytes.Equal(out, want) {
				t.Fatalf("rewrite\n got %q\nwant %q", out, want)
			}
			checkRewrite(t, ct, body, outCT, out, newModel)

			// Decoding readers see the same content too (the
			// quoted-printable part is decoded identically).
			a := multipart.NewReader(bytes.NewReader(body), c.boundary)
			bb := multipart.NewReader(bytes.NewReader(out), nb)
			for {
				pa, errA := a.NextPart()
				pb, errB := bb.NextPart()
				if errA != nil || errB != nil {
					if errA != io.EOF || errB != io.EOF {
						t.Fatalf("decoded parts: %v / %v", errA, errB)
					}
					break
				}
				da, _ := io.ReadAll(pa)
				db, _ := io.ReadAll(pb)
				if pa.FormName() != "model" && !bytes.Equal(da, db) {
					t.Fatalf("decoded %q: %q, want %q", pa.FormName(), db, da)
				}
			}

			out2, outCT2, e := rewriteMultipartModel(ct, body, newModel)
			if e != nil || outCT2 == outCT || bytes.Equal(out2, out) {
				t.Fatalf("second rewrite reused the boundary: %q, %v", outCT2, e)
			}
		})
	}
}

func TestRewriteMultipartModelQuotedPrintableRaw(t *testing.T) {
	qp := "caf=C3=A9 na=C3=AFve=\r\nsoft break"
	body := buildMultipart("B", "\r\n", "", "", []mpPart{
		{"Content-Disposition: form-data; name=\"prompt\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", qp},
		{mpField("model", "\r\n"), "alias"},
	})
	out, _, e := rewriteMultipartModel("multipart/form-data; boundary=B", body, "whisper-1")
	if e != nil {
		t.Fatal(e)
	}
	if !bytes.Contains(out, []byte("Content-Transfer-Encoding: quoted-printable\r\n\r\n"+qp+"\r\n--")) {
		t.Fatalf("quoted-printable part not copied raw: %q", out)
	}
}

func TestNewMultipartBoundaryAvoidsContent(t *testing.T) {
	b, err := newMultipartBoundary(nil, "")
	if err != nil || len(b) != 32 || !validBoundary(b) {
		t.Fatalf("boundary %q, %v", b, err)
	}
	for i := 0; i < 20; i++ {
		b2, err := newMultipartBoundary([]byte("x"+b), b)
		if err != nil || b2 == b {
			t.Fatalf("boundary %q reused, %v", b2, err)
		}
	}
}

// TestMultipartLargeBody runs a body near the 10 MiB cap of arbitrary
// binary audio through both functions.
func TestMultipartLargeBody(t *testing.T) {
	audio := make([]byte, maxMediaRequestBytes-4096)
	x := uint32(2463534242)
	for i := 0; i < len(audio); i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		audio[i] = byte(x)
	}
	ct := mpContentType(mpBoundary)
	body := buildMultipart(mpBoundary, "\r\n", "", "", []mpPart{
		{mpField("file", "\r\n"), string(audio)},
		{mpField("model", "\r\n"), "whisper-1"},
	})
	if m, e := transcriptionModel(ct, body); e != nil || m != "whisper-1" {
		t.Fatalf("model %q, %v", m, e)
	}
	out, outCT, e := rewriteMultipartModel(ct, body, "upstream")
	if e != nil {
		t.Fatal(e)
	}
	checkRewrite(t, ct, body, outCT, out, "upstream")
}
