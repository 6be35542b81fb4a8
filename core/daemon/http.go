package daemon

import (
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
	// api serves everything but /health and the stop request; set by
	// mount before markReady, read only after ready is closed.
	api interface{ Handler(unix bool) http.Handler }
}

// mount sets the API; call before markReady.
func (s *server) mount(a interface{ Handler(unix bool) http.Handler }) { s.api = a }

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
	var (
		once sync.Once
		api  http.Handler
	)
	mux.HandleFunc("/", s.gated(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { api = s.api.Handler(unix) })
		api.ServeHTTP(w, r)
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
