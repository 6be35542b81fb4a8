// Package docfiles writes the documents the tests of read_file read: small
// OpenDocument files written as their XML, the Office files LibreOffice
// converts them to, and hostile files (a deeply nested PDF, a PDF that
// draws a word a billion times, a zip bomb in a DOCX).
package docfiles
