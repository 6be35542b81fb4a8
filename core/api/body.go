package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
)

// The one reader of a create request's body (POST /tasks, /tasks/batch,
// /presets, /schedules): JSON, or multipart form fields with "files" parts.

// receive reads a create request's body into a T: a JSON body by decode
// (its size cap, its unknown-field rules), a multipart one by fromForm on
// its text fields, its "files" parts staged as uploads in a temporary
// folder under the tasks folder, the whole body capped at maxUpload. Call
// done (never nil) when the uploads have been taken; when receive fails,
// nothing it staged is left behind.
func receive[T any](a *API, w http.ResponseWriter, r *http.Request, fromForm func(http.ResponseWriter, form) (T, error)) (in T, uploads []files.Source, done func(), err error) {
	done = func() {}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return in, nil, done, decode(w, r, &in)
	}
	tmp, err := os.MkdirTemp(a.cfg.Paths.Tasks(), ".upload-")
	if err != nil {
		return in, nil, done, fmt.Errorf("receive upload: %w", err)
	}
	fields, uploads, err := a.readMultipart(w, r, tmp)
	if err == nil {
		in, err = fromForm(w, fields)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return in, nil, done, err
	}
	return in, uploads, func() { os.RemoveAll(tmp) }, nil
}

// form is the text fields of a multipart body; a field may repeat (list
// fields such as allowHosts, or Swift's mentionedSkillNames[]).
type form map[string][]string

// one is a field that must not repeat ("" when absent).
func (f form) one(name string) (string, error) {
	v := f[name]
	if len(v) > 1 {
		return "", errdefs.Invalidf("form field %q given %d times", name, len(v))
	}
	if len(v) == 0 {
		return "", nil
	}
	return strings.TrimSpace(v[0]), nil
}

// list is a list field: its parts, under name or name[], blank ones left
// out.
func (f form) list(name string) []string {
	var out []string
	for _, v := range append(f[name], f[name+"[]"]...) {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// formBool reads a form boolean as the Swift server does (true, 1) and
// also false and 0; anything else is a 400, not a silent false.
func formBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, errdefs.Invalidf("%s %q: want true or false", name, v)
}

// maxUpload is the cap of a request body with files: Settings'
// maxUploadMB, or the configuration's override.
func (a *API) maxUpload() (int64, string) {
	if a.cfg.MaxUploadBytes > 0 {
		return a.cfg.MaxUploadBytes, fmt.Sprintf("%d bytes", a.cfg.MaxUploadBytes)
	}
	mb := a.cfg.Settings().MaxUploadMB
	return int64(mb) << 20, fmt.Sprintf("%d MB (Settings: maxUploadMB)", mb)
}

// readMultipart streams a multipart body: form fields into a map, "files"
// parts into files under tmp. The body is capped at maxUpload.
func (a *API) readMultipart(w http.ResponseWriter, r *http.Request, tmp string) (form, []files.Source, error) {
	limit, said := a.maxUpload()
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	fields, ups, err := readParts(r, tmp)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, nil, errdefs.TooLargef("the request with its files is over the upload limit of %s", said)
	}
	return fields, ups, err
}

// readParts is readMultipart's reading, under its cap.
func readParts(r *http.Request, tmp string) (form, []files.Source, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, errdefs.Invalidf("bad multipart body: %v", err)
	}
	fields := form{}
	size := 0
	var ups []files.Source
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, multipartErr(err)
		}
		name := part.FormName()
		switch {
		case name == "files" || name == "file":
			// The raw name, not Part.FileName (which drops directories):
			// a name with a path is refused, not silently shortened.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			fname, err := files.CheckName(params["filename"])
			if err != nil {
				return nil, nil, err
			}
			if seen[fname] {
				return nil, nil, errdefs.Invalidf("input file %q given twice", fname)
			}
			seen[fname] = true
			path := filepath.Join(tmp, fmt.Sprintf("%d", len(ups)))
			if err := savePart(part, path); err != nil {
				return nil, nil, multipartErr(err)
			}
			ups = append(ups, files.Source{Name: fname, Path: path})
		case part.FileName() != "":
			return nil, nil, errdefs.Invalidf("file part %q: files go in parts named \"files\"", name)
		default:
			b, err := io.ReadAll(io.LimitReader(part, maxJSONBytes+1))
			if err != nil {
				return nil, nil, multipartErr(err)
			}
			if size += len(b); size > maxJSONBytes {
				return nil, nil, errdefs.TooLargef("form field %q takes the form fields over %d bytes", name, maxJSONBytes)
			}
			if len(fields[name]) >= 1000 {
				return nil, nil, errdefs.Invalidf("form field %q given over 1000 times", name)
			}
			fields[name] = append(fields[name], string(b))
		}
	}
	return fields, ups, nil
}

func multipartErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return errdefs.Invalidf("bad multipart body: %v", err)
}

func savePart(part *multipart.Part, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, part)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
