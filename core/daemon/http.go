package daemon

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
)

// server is the helper's HTTP surface until the REST API proper is mounted:
// /health, the readiness gate, the stop request and JSON errors.
type server struct {
	log  *slog.Logger
	stop func()

	ready chan struct{} // closed by markReady
	once  sync.Once
}

func newServer(log *slog.Logger, stop func()) *server {
	return &server{log: log, stop: stop, ready: make(chan struct{})}
}

func (s *server) markReady() {
	s.once.Do(func() { close(s.ready) })
}

// handler returns the routes of one listener. Only the unix socket, whose file
// mode admits only this user, offers the stop request.
func (s *server) handler(unix bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("OK"))
	})
	if unix {
		mux.HandleFunc("POST /internal/v1/shutdown", s.gated(func(w http.ResponseWriter, r *http.Request) {
			s.log.Info("stop requested over the unix socket")
			w.WriteHeader(http.StatusAccepted)
			s.stop()
		}))
	}
	mux.HandleFunc("/", s.gated(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no route for "+r.Method+" "+r.URL.Path)
	}))
	return mux
}

// gated holds a request until the helper is ready (or the client gives up).
func (s *server) gated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.ready:
			h(w, r)
		case <-r.Context().Done():
		}
	}
}

// writeError writes the API's error shape: {"error": {"message", "code"}}.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": message, "code": code}})
}
