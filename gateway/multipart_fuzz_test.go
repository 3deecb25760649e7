package gateway

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"
)

func addMultipartSeeds(f *testing.F, model string) {
	cases := mpValidCases()
	for i := 0; i < len(cases); i++ {
		body := cases[i].body()
		if len(body) > 4096 {
			continue
		}
		f.Add(mpContentType(cases[i].boundary), body, model)
	}
	ct := mpContentType(mpBoundary)
	f.Add(ct, []byte("--"+mpBoundary+"--\r\n"), model)
	f.Add(ct, buildMultipart(mpBoundary, "\r\n", "", "", []mpPart{{mpField("model", "\r\n"), "a"}, {mpField("model", "\r\n"), "b"}}), model)
	f.Add(ct, buildMultipart(mpBoundary, "\r\n", "", "", []mpPart{{mpField("Model", "\r\n"), "a"}}), model)
	f.Add("multipart/form-data; boundary=B", []byte("--B\r\n\r\n--B\r\n\r\n\r\n--B--"), model)
	f.Add("multipart/form-data; boundary=B", []byte("--B\nContent-Disposition: form-data; name=model\n\nm\n--B--\n"), model)
	f.Add("application/json", []byte(`{"model":"m"}`), model)
}

// FuzzTranscriptionModel: no panics; a refusal is a 400 with a code and
// never a disagreement between the raw scanner and mime/multipart; an
// accepted body has exactly one "model" form field, as mime/multipart
// (and, when it parses, ReadForm) sees it, holding the returned value.
func FuzzTranscriptionModel(f *testing.F) {
	addMultipartSeeds(f, "")
	f.Fuzz(func(t *testing.T, ct string, body []byte, _ string) {
		model, e := transcriptionModel(ct, body)
		if e != nil {
			if e.Status != 400 || e.Code == "" {
				t.Fatalf("refusal %d %q", e.Status, e.Code)
			}
			if e.Cause == errMultipartMismatch {
				t.Fatalf("raw scanner disagrees with mime/multipart on %q %q", ct, body)
			}
			return
		}
		if model == "" || len(model) > maxMultipartModelBytes {
			t.Fatalf("accepted model %q", model)
		}
		parts, err := readRawParts(ct, body)
		if err != nil {
			t.Fatalf("accepted a body mime/multipart refuses: %v", err)
		}
		models := 0
		for i := 0; i < len(parts); i++ {
			if parts[i].name == "model" {
				models++
				if string(parts[i].body) != model {
					t.Fatalf("model %q, mime/multipart reads %q", model, parts[i].body)
				}
			}
			if name := parts[i].name; name != "model" && strings.EqualFold(name, "model") {
				t.Fatalf("accepted a %q field", name)
			}
		}
		if models != 1 {
			t.Fatalf("accepted %d model fields", models)
		}
		boundary, _ := multipartBoundary(ct)
		form, err := multipart.NewReader(bytes.NewReader(body), boundary).ReadForm(1 << 20)
		if err == nil {
			defer func() { _ = form.RemoveAll() }()
			if v := form.Value["model"]; len(v) != 1 || v[0] != model || len(form.File["model"]) != 0 {
				t.Fatalf("ReadForm sees model %q, files %d; want %q", v, len(form.File["model"]), model)
			}
		}
	})
}

// FuzzRewriteMultipartModel: whatever transcriptionModel accepts,
// rewriteMultipartModel rewrites to a body whose model is the new one
// and whose other parts are unchanged.
func FuzzRewriteMultipartModel(f *testing.F) {
	addMultipartSeeds(f, "x")
	addMultipartSeeds(f, "openai/whisper-1\r\n--")
	f.Fuzz(func(t *testing.T, ct string, body []byte, model string) {
		_, e := transcriptionModel(ct, body)
		out, outCT, re := rewriteMultipartModel(ct, body, "x")
		if e != nil {
			if re == nil || re.Code != e.Code || out != nil {
				t.Fatalf("transcriptionModel refused (%s) but rewrite gave %+v", e.Code, re)
			}
			return
		}
		if re != nil {
			t.Fatalf("rewrite refused an accepted body: %v", re)
		}
		checkRewrite(t, ct, body, outCT, out, "x")
		if model == "" || len(model) > maxMultipartModelBytes {
			return
		}
		out, outCT, re = rewriteMultipartModel(ct, body, model)
		if re != nil {
			t.Fatalf("rewrite to %q refused: %v", model, re)
		}
		checkRewrite(t, ct, body, outCT, out, model)
	})
}
