// Package web serves the explorer's web UI. This is the API helper's
// placeholder: the UI helper replaces the package's content with the built,
// embedded UI (index.html at /, assets under /assets/, index.html for any
// unknown non-API path). The contract is Handler's signature.
package web

import "net/http"

const placeholder = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lineageflow explorer</title></head>
<body><h1>lineageflow explorer</h1>
<p>The UI is not built into this binary. The API is served under <a href="/api/lf/v1/health">/api/</a>.</p>
</body></html>
`

// Handler serves the UI.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(placeholder))
	})
}
