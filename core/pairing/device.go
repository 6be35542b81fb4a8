package pairing

import "strings"

// Kind is what a user agent says about the device it runs on, in the
// words of Swift's device list: its browser, its system and its type
// (desktop, mobile or tablet). It is a label, never a check: a user agent
// says what its sender wants it to.
type Kind struct {
	Browser, OS, Type string
}

// Name is the kind in a few words: "Safari on iOS".
func (k Kind) Name() string { return k.Browser + " on " + k.OS }

// Describe reads a user agent. Tokens are looked for from the most to the
// least specific, since browsers name the engines they resemble ("Chrome"
// in Edge's, "Safari" in Chrome's).
func Describe(ua string) Kind {
	first := func(pairs [][2]string, fallback string) string {
		for _, p := range pairs {
			if strings.Contains(ua, p[0]) {
				return p[1]
			}
		}
		return fallback
	}
	k := Kind{
		Browser: first([][2]string{{"Edg", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"FxiOS/", "Firefox"},
			{"CriOS/", "Chrome"}, {"Chrome/", "Chrome"}, {"Chromium/", "Chromium"}, {"Safari/", "Safari"},
			{"curl/", "curl"}, {"python", "Python"}, {"Go-http-client", "Go"}}, "A browser"),
		OS: first([][2]string{{"iPhone", "iOS"}, {"iPad", "iPadOS"}, {"Android", "Android"}, {"CrOS", "ChromeOS"},
			{"Mac OS X", "macOS"}, {"Macintosh", "macOS"}, {"Windows", "Windows"}, {"Linux", "Linux"}}, "an unknown system"),
		Type: "desktop",
	}
	switch {
	case strings.Contains(ua, "iPad") || strings.Contains(ua, "Tablet"):
		k.Type = "tablet"
	case strings.Contains(ua, "iPhone") || strings.Contains(ua, "Mobile") || strings.Contains(ua, "Android"):
		k.Type = "mobile"
	}
	return k
}
