// Package documents reads files as the model reads them, inside the guest:
// the text of PDF, Office (DOCX, XLSX, PPTX and the older binary formats),
// OpenDocument, RTF and HTML files, paged and bounded; spreadsheets as CSV,
// one sheet a page; image files decoded, fitted and re-encoded as PNG or
// JPEG. It answers the guest protocol's read_document.
//
// The contract: a hostile file is parsed here, in the guest, and never on
// the host. Everything it takes from a file is bounded: the file's size
// (MaxSourceBytes), a zip container's entries and their expanded size
// (checked before any tool opens it), an image's pixels (checked on its
// header before it is decoded), and each tool the guest runs (pdftotext,
// LibreOffice, heif-convert on Linux; the agent itself on macOS) in time,
// output, CPU and memory, in its own process group, killed at its limit
// or when the request is cancelled. A file that passes none of these ends
// in an error that says which bound it met.
//
// Reader does what is portable (format detection, paging, HTML, images,
// the zip check); an Extractor reads what needs the guest's own tools:
// Tools (the Linux tools) here, and the macOS agent's PDFKit and
// NSAttributedString in guestagent/darwin.
package documents
