package guest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/handler"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// noisyPNG is a PNG too noisy to compress below liftMin.
func noisyPNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.IntN(256))
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

func response(id, result string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`)
}

func TestLiftImage(t *testing.T) {
	data := bytes.Repeat([]byte{0, 1, 2, 0xfb, 0xff}, 8000)
	b64 := base64.StdEncoding.EncodeToString(data)
	shot := `{"format":"png","width":1280,"height":800,"data":"` + b64 + `"}`
	id, out, img, ok := liftImage(response("17", shot), liftMin)
	if !ok || id != "17" || !bytes.Equal(img, data) {
		t.Fatalf("a screenshot response: ok=%v id=%q, %d bytes", ok, id, len(img))
	}
	if want := response("17", `{"format":"png","width":1280,"height":800,"data":""}`); !bytes.Equal(out, want) {
		t.Fatalf("lifted message:\n%.200s\nwant\n%.200s", out, want)
	}
	// Spacing, another key order and a string id are fine too.
	spaced := []byte("{ \"id\" : \"a\\\"b\" ,\n\"jsonrpc\":\"2.0\", \"result\" : { \"data\" : \"" + b64 + "\" , \"format\":\"png\"}\t}")
	if id, _, img, ok := liftImage(spaced, liftMin); !ok || id != `"a\"b"` || !bytes.Equal(img, data) {
		t.Fatalf("a spaced response: ok=%v id=%q", ok, id)
	}
	for name, msg := range map[string][]byte{
		"small":              response("1", `{"format":"png","width":1,"height":1,"data":"`+b64[:400]+`"}`),
		"another field":      response("1", `{"format":"png","width":1,"height":1,"data":"`+b64+`","extra":1}`),
		"data twice":         response("1", `{"data":"`+b64+`","data":"`+b64+`"}`),
		"result twice":       []byte(`{"jsonrpc":"2.0","id":1,"result":` + shot + `,"result":` + shot + `}`),
		"escaped data":       response("1", `{"data":"`+b64[:20000]+`\/`+b64[20000:]+`"}`),
		"not base64":         response("1", `{"data":"`+strings.Repeat("*", 20000)+`"}`),
		"data in a string":   response("1", `{"format":"\"data\":\"`+b64+`\""}`),
		"data nested":        response("1", `{"format":{"data":"`+b64+`"}}`),
		"a request":          []byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":` + shot + `}`),
		"no id":              []byte(`{"jsonrpc":"2.0","result":` + shot + `}`),
		"escaped key":        response("1", `{"d\u0061ta":"`+b64+`"}`),
		"cut short":          response("1", shot)[:30000],
		"not an object":      []byte(`[` + string(response("1", shot)) + `]`),
		"unterminated value": []byte(`{"jsonrpc":"2.0","id":1,"result":{"data":"` + b64),
	} {
		if _, _, _, ok := liftImage(msg, liftMin); ok {
			t.Errorf("%s: lifted", name)
		}
	}
}

// TestScreenshotsArriveLifted: a large screenshot comes through the
// client whole, by way of the lifted image.
func TestScreenshotsArriveLifted(t *testing.T) {
	big := noisyPNG(120, 100)
	if len(big) < liftMin {
		t.Fatalf("test image of %d bytes is under liftMin", len(big))
	}
	methods := handler.Map{
		protocol.MethodHello: func(context.Context, *jrpc2.Request) (any, error) {
			return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: 800, Height: 600, Scale: 1}}, nil
		},
		protocol.MethodScreenshot: func(context.Context, *jrpc2.Request) (any, error) {
			return protocol.ScreenshotResult{Format: "png", Width: 120, Height: 100, Data: big}, nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := Connect(ctx, Config{Dial: liar(t, methods), Key: FixedKey(testKey, false), Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 3 {
		res, err := cl.Screenshot(ctx, protocol.ScreenshotParams{MaxWidth: 1280})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res.Data, big) {
			t.Fatalf("received %d bytes, want the %d sent", len(res.Data), len(big))
		}
	}
	_, ch := cl.current()
	if n := len(ch.images); n != 0 {
		t.Errorf("%d lifted images left behind", n)
	}
	if ch.images == nil {
		t.Error("the screenshots did not go through the lift")
	}
}

// FuzzLiftImage: whatever liftImage lifts, the message it passes on is
// valid JSON exactly when the original is, and reads the same but for the
// emptied data, which is the image's base64. (Small images: the fuzzer
// does poorly with large inputs.)
func FuzzLiftImage(f *testing.F) {
	b64 := base64.StdEncoding.EncodeToString([]byte("a PNG!"))
	f.Add(response("1", `{"format":"png","width":2,"height":2,"data":"`+b64+`"}`))
	f.Add(response(`"x"`, `{"data":"`+b64+`","format":"jpeg"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"data":"` + b64 + `"},"x":[1,{"a":"]"}]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"data":"` + b64 + `"},"x":tru}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		id, out, img, ok := liftImage(msg, 1)
		if !ok {
			return
		}
		if json.Valid(msg) != json.Valid(out) {
			t.Fatalf("valid before: %v, after: %v\n%.300s", json.Valid(msg), json.Valid(out), msg)
		}
		if !json.Valid(msg) {
			return
		}
		var before, after map[string]any
		json.Unmarshal(msg, &before)
		json.Unmarshal(out, &after)
		res := before["result"].(map[string]any)
		if got := base64.StdEncoding.EncodeToString(img); got != res["data"] {
			t.Fatal("the lifted image is not the data")
		}
		res["data"] = ""
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("the message changed beyond its data:\n%v\n%v", before, after)
		}
		var raw map[string]json.RawMessage
		json.Unmarshal(msg, &raw)
		if string(raw["id"]) != id {
			t.Fatalf("id %q, want %q", id, raw["id"])
		}
	})
}
