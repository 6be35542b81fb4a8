package darwin

/*
#cgo LDFLAGS: -framework PDFKit -framework ImageIO
#include <stdlib.h>
#include "documents_darwin.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/hivecrew/hivecrew/guestagent/documents"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// ExtractMain is the child a Documents read runs: args are what, format,
// first page and path ("text pdf 1 /tmp/.../document.pdf"). It writes
// the text's documents.Pages as JSON, or the image as a PNG, to out and
// returns the exit status; what fails goes to errOut. Its CPU time is
// limited to documents.DefaultTimeout.
func ExtractMain(args []string, out, errOut io.Writer) int {
	lim := uint64(documents.DefaultTimeout.Seconds())
	syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: lim, Max: lim})
	if len(args) != 4 {
		fmt.Fprintln(errOut, "usage: hivecrew-guestagent "+ExtractFlag+" text|image FORMAT FIRST PATH")
		return 2
	}
	what, format, path := args[0], args[1], args[3]
	first, err := strconv.Atoi(args[2])
	if err != nil {
		fmt.Fprintln(errOut, "bad first page:", args[2])
		return 2
	}
	cpath, cformat := C.CString(path), C.CString(format)
	defer C.free(unsafe.Pointer(cpath))
	defer C.free(unsafe.Pointer(cformat))
	switch {
	case what == "image":
		var n C.size_t
		p := C.hc_image_png(cpath, C.int(protocol.MaxDocumentImageSide), &n)
		if p == nil {
			fmt.Fprintln(errOut, "ImageIO could not decode the image")
			return 1
		}
		defer C.free(p)
		out.Write(C.GoBytes(p, C.int(n)))
		return 0
	case what == "text" && format == string(documents.PDF):
		var total C.int
		p := C.hc_pdf_text(cpath, C.int(first), pdfBatch, &total)
		switch {
		case total == -2:
			fmt.Fprintln(errOut, "the PDF is encrypted")
			return 1
		case p == nil:
			fmt.Fprintln(errOut, "PDFKit could not open the PDF: it is damaged or not a PDF")
			return 1
		}
		defer C.free(unsafe.Pointer(p))
		texts := strings.Split(C.GoString(p), "\f")
		texts = texts[:max(len(texts)-1, 0)]
		return writePages(out, errOut, documents.Pages{Total: int(total), First: first, Text: texts})
	case what == "text":
		var cerr *C.char
		p := C.hc_rich_text(cpath, cformat, &cerr)
		if p == nil {
			defer C.free(unsafe.Pointer(cerr))
			fmt.Fprintln(errOut, "the document could not be read:", C.GoString(cerr))
			return 1
		}
		defer C.free(unsafe.Pointer(p))
		return writePages(out, errOut, documents.Pages{Total: 1, First: 1, Text: []string{C.GoString(p)}})
	}
	fmt.Fprintln(errOut, "unknown read:", what)
	return 2
}

func writePages(out, errOut io.Writer, p documents.Pages) int {
	if err := json.NewEncoder(out).Encode(p); err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	return 0
}
