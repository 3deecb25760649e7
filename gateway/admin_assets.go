package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// The admin page and its content-hashed assets, served without
// authentication (they carry no data: every value comes from the gated
// JSON routes). An asset's name carries the hash of its content, so a
// response is cacheable forever. Until the dashboard is built the page is
// a placeholder with one stylesheet.

// adminAsset is one file under /admin/assets/.
type adminAsset struct {
	contentType string
	body        []byte
}

// adminAssetCSS is the placeholder page's stylesheet.
const adminAssetCSS = `body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1f2328}
code{background:#f3f4f6;padding:0 .25rem;border-radius:3px}
`

// adminAssetName is name's hashed form: stem-HASH.ext, HASH the first 12
// hex digits of the content's SHA-256.
func adminAssetName(stem, ext string, body []byte) string {
	sum := sha256.Sum256(body)
	return stem + "-" + hex.EncodeToString(sum[:6]) + "." + ext
}

// adminAssets are the assets by hashed name; adminIndex is GET /admin.
var (
	adminCSSName = adminAssetName("admin", "css", []byte(adminAssetCSS))
	adminAssets  = map[string]adminAsset{
		adminCSSName: {contentType: "text/css; charset=utf-8", body: []byte(adminAssetCSS)},
	}
	adminIndex = []byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>llmgateway admin</title>
<link rel="stylesheet" href="/admin/assets/` + adminCSSName + `"></head>
<body><h1>llmgateway admin</h1><p>The dashboard is not built yet. The read-only JSON API is under <code>/admin/api/</code> (an admin key in <code>x-api-key</code> or <code>Authorization: Bearer</code>).</p></body></html>
`)
)

// serveAdminStatic answers GET /admin and /admin/assets/{name}; it
// reports false for any other path.
func serveAdminStatic(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	h := w.Header()
	if p == "/admin" || p == "/admin/" {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		writeAdminBody(w, r, adminIndex)
		return true
	}
	if !strings.HasPrefix(p, "/admin/assets/") {
		return false
	}
	a, ok := adminAssets[strings.TrimPrefix(p, "/admin/assets/")]
	if !ok {
		notFoundTraced(w, r)
		return true
	}
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	writeAdminBody(w, r, a.body)
	return true
}

func writeAdminBody(w http.ResponseWriter, r *http.Request, body []byte) {
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
