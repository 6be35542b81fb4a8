module github.com/hivecrew/hivecrew

go 1.26.0

require (
	codeberg.org/readeck/go-readability/v2 v2.1.3
	fyne.io/systray v1.12.2
	github.com/Code-Hex/vz/v3 v3.7.1
	github.com/JohannesKaufmann/html-to-markdown/v2 v2.5.2
	github.com/anthropics/anthropic-sdk-go/v2 v2.15.0
	github.com/aymanbagabas/go-udiff v0.4.1
	github.com/creachadair/jrpc2 v1.3.6
	github.com/go-pdf/fpdf v0.9.0
	github.com/godbus/dbus/v5 v5.2.4
	github.com/google/jsonschema-go v0.4.3
	github.com/google/nftables v0.2.0
	github.com/google/uuid v1.6.0
	github.com/jezek/xgb v1.1.1
	github.com/keybase/dbus v0.0.0-20220506165403-5aa21ea2c23a
	github.com/keybase/go-keychain v0.0.1
	github.com/klauspost/compress v1.20.4
	github.com/mdlayher/vsock v1.4.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/pquerna/otp v1.5.0
	github.com/progrium/darwinkit v0.5.0
	github.com/sashabaranov/go-openai v1.43.0
	github.com/yuin/goldmark v1.8.2
	go.uber.org/goleak v1.3.0
	golang.design/x/hotkey v0.4.1
	golang.org/x/image v0.33.0
	golang.org/x/mod v0.41.0
	golang.org/x/net v0.62.0
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.49.0
	golang.org/x/time v0.15.0
	gopkg.in/yaml.v3 v3.0.1
	gorm.io/driver/sqlite v1.6.0
	gorm.io/gorm v1.31.1
)

require (
	github.com/Code-Hex/go-infinity-channel v1.0.0 // indirect
	github.com/JohannesKaufmann/dom v0.3.1 // indirect
	github.com/andybalholm/cascadia v1.3.4 // indirect
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/boombuler/barcode v1.0.1 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/creachadair/mds v0.31.0 // indirect
	github.com/go-logr/logr v1.4.2 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-shiori/dom v0.0.0-20230515143342-73569d674e1c // indirect
	github.com/gogs/chardet v0.0.0-20211120154057-b7413eaefb8f // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/invopop/jsonschema v0.14.0 // indirect
	github.com/itlightning/dateparse v0.2.1 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	github.com/josharian/native v1.1.0 // indirect
	github.com/mattn/go-sqlite3 v1.14.22 // indirect
	github.com/mdlayher/netlink v1.7.2 // indirect
	github.com/mdlayher/socket v0.8.0 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.1 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1 // indirect
	github.com/tidwall/gjson v1.18.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/otel v1.33.0 // indirect
	go.opentelemetry.io/otel/metric v1.33.0 // indirect
	go.opentelemetry.io/otel/trace v1.33.0 // indirect
	go.yaml.in/yaml/v4 v4.0.0-rc.2 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
