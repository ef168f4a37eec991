package explorer

import "net/http"

// marquezRoutes mounts the Marquez-compatible read routes under /api/v1.
func (s *Server) marquezRoutes(m *http.ServeMux) {}
