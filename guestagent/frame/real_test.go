package frame

import (
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"testing"
)

func loadReal(b *testing.B, name string) *Frame {
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, _, err := image.Decode(f)
	if err != nil {
		b.Fatal(err)
	}
	return FromImage(m)
}

func BenchmarkReal(b *testing.B) {
	for _, n := range []string{"/tmp/mousepad.png", "/work/main/tests/browser/out/screens/dashboard-light-wide.png", "/work/main/tests/browser/out/screens/agent-dark-wide.png", "/root/go/pkg/mod/golang.org/x/image@v0.33.0/testdata/blue-purple-pink-large.png"} {
		f := loadReal(b, n)
		b.Run(n[len(n)-14:], func(b *testing.B) {
			size := 0
			for b.Loop() {
				var e Encoder
				d, _, _ := e.Encode(f)
				size = len(d)
			}
			b.ReportMetric(float64(size)/1024, "KB")
		})
	}
}
