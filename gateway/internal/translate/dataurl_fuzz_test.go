package translate

import (
	"strings"
	"testing"
)

// FuzzParseDataURL: a data URL is split into a non-empty media type (no
// parameters) and non-empty base64 data that are the URL's own text:
// "data:" + the media type starts it (in any case), ";base64," + the
// data ends it.
func FuzzParseDataURL(f *testing.F) {
	seeds := []string{
		"data:image/png;base64,iVBORw0KGgo=", "DATA:image/jpeg;charset=x;BASE64,/9j/", "data:;base64,AA", "data:image/png,AA",
		"data:image/png;base64,", "data:a;b;base64,x,y", "https://example.com/x.png", "data:", "",
	}
	for i := 0; i < len(seeds); i++ {
		f.Add(seeds[i])
	}
	f.Fuzz(func(t *testing.T, url string) {
		mediaType, data, ok := parseDataURL(url)
		if !ok {
			if mediaType != "" || data != "" {
				t.Fatalf("refused %q with %q %q", url, mediaType, data)
			}
			return
		}
		if mediaType == "" || data == "" || strings.ContainsAny(mediaType, ";,") {
			t.Fatalf("%q split into %q %q", url, mediaType, data)
		}
		if !hasDataScheme(url) || !strings.HasPrefix(url[len("data:"):], mediaType) {
			t.Fatalf("%q does not start with its media type %q", url, mediaType)
		}
		head := url[:len(url)-len(data)]
		if !strings.HasSuffix(url, data) || !strings.HasSuffix(strings.ToLower(head), ";base64,") || strings.Count(head, ",") != 1 {
			t.Fatalf("%q does not end with ;base64,%q", url, data)
		}
	})
}
