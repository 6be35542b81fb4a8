// Command icons writes the menu-bar icons (template and coloured, for the
// idle, working and attention states) into Resources/icons, as the app
// draws them, for the bundle: `go run ./scripts/icons [DIR]`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hivecrew/hivecrew/app/menubar"
)

func main() {
	dir := "Resources/icons"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "icons:", err)
		os.Exit(1)
	}
	for _, s := range []menubar.State{menubar.Idle, menubar.Working, menubar.Attention} {
		for _, template := range []bool{true, false} {
			name := fmt.Sprintf("MenuBar-%s.png", s)
			if template {
				name = fmt.Sprintf("MenuBar-%sTemplate.png", s)
			}
			if err := os.WriteFile(filepath.Join(dir, name), menubar.Icon(s, template), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "icons:", err)
				os.Exit(1)
			}
		}
	}
	fmt.Println("icons written to", dir)
}
