package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// download fetches url into dst, resumably: the bytes go to dst.partial,
// and a download that was cut short (a crash, a lost connection, a
// cancelled build) continues from where it stopped with an HTTP range
// request; a server that ignores ranges sends it again from the start.
// progress (may be nil) is told the bytes done and the total (-1 while
// unknown). A finished download is renamed to dst.
func download(ctx context.Context, client *http.Client, url, dst string, progress func(done, total int64)) error {
	if client == nil {
		client = http.DefaultClient
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() {
		progress(fi.Size(), fi.Size())
		return nil // already downloaded
	}
	part := dst + ".partial"
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		err := downloadOnce(ctx, client, url, part, progress)
		if err == nil {
			return os.Rename(part, dst)
		}
		if ctx.Err() != nil || errors.Is(err, errPermanent) {
			return err
		}
		lastErr = err
	}
	return fmt.Errorf("download %s: %w", url, lastErr)
}

// errPermanent marks a download error retrying cannot help.
var errPermanent = errors.New("permanent")

// downloadOnce makes one attempt, resuming from what part holds.
func downloadOnce(ctx context.Context, client *http.Client, url, part string, progress func(done, total int64)) error {
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	total := int64(-1)
	switch resp.StatusCode {
	case http.StatusOK: // the whole file: start over
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		have = 0
		total = resp.ContentLength
	case http.StatusPartialContent:
		start, size, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return fmt.Errorf("%w: the server resumed at an unexpected place (%q)", errPermanent, resp.Header.Get("Content-Range"))
		}
		total = size
	case http.StatusRequestedRangeNotSatisfiable:
		// part may hold the whole file already.
		if _, size, ok := contentRange(resp.Header.Get("Content-Range")); ok && size == have {
			progress(have, have)
			return nil
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		return errors.New("the partial download did not match; starting over")
	case http.StatusNotFound, http.StatusForbidden, http.StatusUnauthorized, http.StatusGone:
		return fmt.Errorf("%w: %s: %s", errPermanent, url, resp.Status)
	default:
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	progress(have, total)
	buf := make([]byte, 1<<20)
	last := time.Now()
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := f.Write(buf[:n]); err != nil {
				return err
			}
			have += int64(n)
			if time.Since(last) > 200*time.Millisecond {
				progress(have, total)
				last = time.Now()
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if total >= 0 && have != total {
		return fmt.Errorf("the download ended at %d of %d bytes", have, total)
	}
	progress(have, have)
	return f.Sync()
}

// contentRange parses "bytes START-END/SIZE" (or "bytes */SIZE").
func contentRange(h string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	size, err := strconv.ParseInt(sz, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if rng == "*" {
		return 0, size, true
	}
	s, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err = strconv.ParseInt(s, 10, 64)
	return start, size, err == nil
}

// checkDownloadURL refuses anything but https.
func checkDownloadURL(u string) error {
	if !strings.HasPrefix(u, "https://") {
		return errdefs.Invalidf("restore image URL %q: only https downloads are allowed", u)
	}
	return nil
}
