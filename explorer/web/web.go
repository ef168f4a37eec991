// Package web serves the explorer's web UI: the files of dist/, built from
// the TypeScript sources in src/ by `npm ci && npm run build` (see
// build.mjs) and embedded into the binary, so `go build` needs no npm.
//
// dist/ is committed. TestDistMatchesSources checks (without npm) that dist/
// was rebuilt after the last change of a source, and TestDistReproducible
// (with npm) rebuilds it from the lockfile and compares byte for byte.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed dist
var embedded embed.FS

// Dist is the built UI (index.html, assets/, build-info.json).
func Dist() fs.FS {
	sub, err := fs.Sub(embedded, "dist")
	if err != nil {
		panic("explorer/web: " + err.Error()) // dist is embedded at build time: cannot happen
	}
	return sub
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the UI: the files of dist/ by path, and index.html for
// every other GET path outside /api/ (so deep links such as
// /?node=...&up=2 or /lineage/... load the app). Paths under /api/ that
// reach it get a JSON 404, like the API's own errors.
func Handler() http.Handler {
	files := map[string]*asset{}
	_ = fs.WalkDir(Dist(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Dist(), p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = http.DetectContentType(b)
		}
		files["/"+p] = &asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	index := files["/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean("/" + r.URL.Path)
		if p == "/api" || strings.HasPrefix(p, "/api/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":404,"message":"no such API route"}`))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		a := files[p]
		if a == nil {
			if strings.HasPrefix(p, "/assets/") || index == nil {
				http.NotFound(w, r)
				return
			}
			a = index // a deep link: the app reads its state from the URL
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("ETag", a.etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		if a == index {
			h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}
