package serve

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
)

// web holds the dashboard: plain HTML, CSS and JavaScript, no CDN, so it
// works offline and from the binary alone.
//
//go:embed web
var web embed.FS

// dashboard serves the embedded dashboard; unknown paths outside the API
// get the JSON 404 the API gives.
func dashboard() http.Handler {
	sub, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embed directive guarantees the folder
	}
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isDashboardPath(r.URL.Path) {
			WriteError(w, notFound("no route %s %s", r.Method, r.URL.Path))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			WriteError(w, &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: r.Method + " " + r.URL.Path + ": the dashboard is read with GET"})
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		files.ServeHTTP(w, r)
	})
}

// isDashboardPath reports whether p names a dashboard file: "/" or a file
// in the embedded folder.
func isDashboardPath(p string) bool {
	if p == "/" {
		return true
	}
	name := path.Clean(p)[1:]
	if name == "" {
		return true
	}
	f, err := web.Open("web/" + name)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	return err == nil && !st.IsDir()
}
