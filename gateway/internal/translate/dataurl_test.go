package translate

import (
	"strings"
	"testing"

	"github.com/llmgateway/llmgateway/gateway/internal/apierr"
)

func TestDataURLParse(t *testing.T) {
	cases := []struct {
		name, url       string
		mediaType, data string
		ok              bool
	}{
		{"lower_case", "data:image/png;base64,iVBORw0KGgo=", "image/png", "iVBORw0KGgo=", true},
		{"upper_case_scheme_and_marker", "DATA:image/png;BASE64,iVBORw0KGgo=", "image/png", "iVBORw0KGgo=", true},
		{"mixed_case_scheme_and_marker", "Data:image/jpeg;Base64,/9j/4AAQ", "image/jpeg", "/9j/4AAQ", true},
		{"media_type_kept_as_written", "data:Image/PNG;base64,AAAA", "Image/PNG", "AAAA", true},
		{"charset_parameter_dropped", "data:text/plain;charset=utf-8;base64,aGk=", "text/plain", "aGk=", true},
		{"several_parameters_dropped", "data:application/pdf;name=a.pdf;x=y;base64,JVBERi0=", "application/pdf", "JVBERi0=", true},
		{"comma_in_data_kept", "data:text/plain;base64,a,b", "text/plain", "a,b", true},
		{"no_comma", "data:image/png;base64", "", "", false},
		{"no_base64_marker", "data:image/png,abc", "", "", false},
		{"percent_encoded_with_charset", "data:text/plain;charset=utf-8,hi%20there", "", "", false},
		{"marker_not_last", "data:image/png;base64;x=y,AAAA", "", "", false},
		{"empty_data", "data:image/png;base64,", "", "", false},
		{"empty_media_type", "data:;base64,AAAA", "", "", false},
		{"parameter_without_media_type", "data:;charset=utf-8;base64,AAAA", "", "", false},
		{"empty_everything", "data:,", "", "", false},
		{"scheme_only", "data:", "", "", false},
		{"other_scheme", "https://example.com/a.png", "", "", false},
		{"no_scheme", "image/png;base64,AAAA", "", "", false},
		{"empty", "", "", "", false},
	}
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			mediaType, data, ok := parseDataURL(c.url)
			if mediaType != c.mediaType || data != c.data || ok != c.ok {
				t.Errorf("parseDataURL(%q) = %q, %q, %v; want %q, %q, %v", c.url, mediaType, data, ok, c.mediaType, c.data, c.ok)
			}
		})
	}
	if !hasDataScheme("DaTa:x") || hasDataScheme("dat") || hasDataScheme("https://data:") {
		t.Error("hasDataScheme")
	}
}

// Both translators read data URLs with the same parser: whatever the
// case of the scheme and of the base64 marker, the same inline image and
// file reach Anthropic and Gemini, and the same malformed URL is refused
// by both.
func TestDataURLRequestTranslation(t *testing.T) {
	imageRequest := func(url string) string {
		return `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
	}
	fileRequest := func(data string) string {
		return `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"` + data + `","filename":"a.pdf"}}]}]}`
	}
	translators := []struct {
		name      string
		translate func(body string) ([]byte, *apierr.Error)
		// image and file are what the translated request must contain
		// for an image/png and an application/pdf data URL.
		image, file string
	}{
		{"anthropic",
			func(body string) ([]byte, *apierr.Error) {
				out, _, e := AnthropicChatRequest([]byte(body), "claude-up")
				return out, e
			},
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`,
			`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}`},
		{"gemini",
			func(body string) ([]byte, *apierr.Error) {
				out, _, e := GeminiChatRequest([]byte(body))
				return out, e
			},
			`{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}`,
			`{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}`},
	}
	urls := []struct {
		name, image, file string
	}{
		{"lower_case", "data:image/png;base64,iVBORw0KGgo=", "data:application/pdf;base64,JVBERi0="},
		{"upper_case", "DATA:image/png;BASE64,iVBORw0KGgo=", "DATA:application/pdf;BASE64,JVBERi0="},
		{"charset_parameter", "data:image/png;charset=binary;base64,iVBORw0KGgo=", "Data:application/pdf;charset=binary;Base64,JVBERi0="},
	}
	malformed := []string{"DATA:image/png,iVBORw0KGgo=", "data:image/png;base64,", "DATA:;BASE64,iVBORw0KGgo="}
	for i := 0; i < len(translators); i++ {
		tr := translators[i]
		for j := 0; j < len(urls); j++ {
			u := urls[j]
			t.Run(tr.name+"/"+u.name, func(t *testing.T) {
				out, e := tr.translate(imageRequest(u.image))
				if e != nil || !strings.Contains(string(out), tr.image) {
					t.Errorf("image %q: %s %v, want it to contain %s", u.image, out, e, tr.image)
				}
				out, e = tr.translate(fileRequest(u.file))
				if e != nil || !strings.Contains(string(out), tr.file) {
					t.Errorf("file %q: %s %v, want it to contain %s", u.file, out, e, tr.file)
				}
			})
		}
		for j := 0; j < len(malformed); j++ {
			url := malformed[j]
			t.Run(tr.name+"/malformed/"+url, func(t *testing.T) {
				if out, e := tr.translate(imageRequest(url)); e == nil || e.Status != 400 || e.Code != "invalid_request" {
					t.Errorf("image %q: %s %+v, want a 400 invalid_request", url, out, e)
				}
				if out, e := tr.translate(fileRequest(url)); e == nil || e.Status != 400 || e.Code != "invalid_request" {
					t.Errorf("file %q: %s %+v, want a 400 invalid_request", url, out, e)
				}
			})
		}
	}
}
