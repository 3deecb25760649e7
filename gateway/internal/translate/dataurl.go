package translate

import "strings"

// Data URLs (RFC 2397) as clients send inline images and files:
// "data:<media type>[;<parameter>]...;base64,<data>". Both translators
// read them with parseDataURL, so a URL one provider accepts the other
// accepts too.

// hasDataScheme reports whether url starts with the "data:" scheme, in
// any case (URL schemes are case-insensitive).
func hasDataScheme(url string) bool {
	return len(url) >= len("data:") && strings.EqualFold(url[:len("data:")], "data:")
}

// dataURLBase64 is the parameter that marks base64 data; it ends the
// media type and its parameters.
const dataURLBase64 = ";base64"

// parseDataURL splits a base64 data URL into its media type and its
// base64 data. The scheme and the ";base64" marker are case-insensitive.
// The media type is returned as the client wrote it, without its
// parameters (";charset=..."): the providers take a bare MIME type and
// the gateway does not second-guess its spelling. ok (the third result)
// is false for anything else: another scheme, no comma, data that is not
// base64 (no ";base64" marker), an empty media type or empty data.
func parseDataURL(url string) (string, string, bool) {
	if !hasDataScheme(url) {
		return "", "", false
	}
	comma := strings.IndexByte(url, ',')
	if comma < 0 {
		return "", "", false
	}
	meta := url[len("data:"):comma]
	if len(meta) < len(dataURLBase64) || !strings.EqualFold(meta[len(meta)-len(dataURLBase64):], dataURLBase64) {
		return "", "", false
	}
	mediaType := meta[:len(meta)-len(dataURLBase64)]
	if i := strings.IndexByte(mediaType, ';'); i >= 0 {
		mediaType = mediaType[:i]
	}
	data := url[comma+1:]
	if mediaType == "" || data == "" {
		return "", "", false
	}
	return mediaType, data, true
}
