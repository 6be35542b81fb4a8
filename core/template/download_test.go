package template

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// image is the file the test servers serve.
var image = bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB

// TestDownloadResumes: a download cut short continues with a range request
// from where it stopped, reports progress up to the total, and the file
// appears only when complete.
func TestDownloadResumes(t *testing.T) {
	var mu sync.Mutex
	var ranges []string
	cut := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		first := cut
		cut = false
		mu.Unlock()
		if first {
			// Promise the whole file, send 300 kB, drop the connection.
			w.Header().Set("Content-Length", "1048576")
			w.WriteHeader(http.StatusOK)
			w.Write(image[:300_000])
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		http.ServeContent(w, r, "image.ipsw", time.Time{}, bytes.NewReader(image))
	}))
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "image.ipsw")
	var last, total int64
	err := download(context.Background(), srv.Client(), srv.URL+"/image.ipsw", dst, func(done, all int64) { last, total = done, all })
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, image) {
		t.Fatalf("downloaded %d bytes (%v), want the 1 MiB image", len(got), err)
	}
	if len(ranges) != 2 || ranges[0] != "" || ranges[1] != "bytes=300000-" {
		t.Errorf("requests' ranges = %q, want none and then bytes=300000-", ranges)
	}
	if last != int64(len(image)) || total != int64(len(image)) {
		t.Errorf("last progress %d of %d", last, total)
	}
	if _, err := os.Stat(dst + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the partial file stayed: %v", err)
	}
	// A finished download is not fetched again.
	ranges = nil
	if err := download(context.Background(), srv.Client(), srv.URL+"/image.ipsw", dst, nil); err != nil || len(ranges) != 0 {
		t.Errorf("second download: %v, %d requests", err, len(ranges))
	}
}

// TestDownloadStartsOverWithoutRanges: a server that ignores ranges sends
// the whole file again, and the partial bytes are replaced, not appended.
func TestDownloadStartsOverWithoutRanges(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(image) }))
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "image.ipsw")
	os.WriteFile(dst+".partial", []byte("stale bytes from another file"), 0o644)
	if err := download(context.Background(), srv.Client(), srv.URL, dst, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, image) {
		t.Fatalf("downloaded %d bytes, want the image", len(got))
	}
}

// TestDownloadGivesUpOnMissingFiles: a 404 is final (no retries), and a
// cancelled download keeps its partial bytes for the next attempt.
func TestDownloadGivesUpOnMissingFiles(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n++; http.NotFound(w, r) }))
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "x.ipsw")
	err := download(context.Background(), srv.Client(), srv.URL, dst, nil)
	if !errors.Is(err, errPermanent) || !strings.Contains(err.Error(), "404") || n != 1 {
		t.Fatalf("404: %v after %d requests", err, n)
	}

	started := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1048576")
		w.Write(image[:100_000])
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	defer slow.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; time.Sleep(100 * time.Millisecond); cancel() }()
	if err := download(ctx, slow.Client(), slow.URL, dst, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled download: %v", err)
	}
	if fi, err := os.Stat(dst + ".partial"); err != nil || fi.Size() != 100_000 {
		t.Errorf("partial file after cancel: %v %v", fi, err)
	}
}

// TestContentRange parses the header forms servers send.
func TestContentRange(t *testing.T) {
	if s, n, ok := contentRange("bytes 300000-1048575/1048576"); !ok || s != 300000 || n != 1048576 {
		t.Errorf("got %d %d %v", s, n, ok)
	}
	if _, n, ok := contentRange("bytes */42"); !ok || n != 42 {
		t.Errorf("got %d %v", n, ok)
	}
	for _, bad := range []string{"", "bytes", "items 1-2/3", "bytes 1-2/x"} {
		if _, _, ok := contentRange(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
