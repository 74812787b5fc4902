// The BPMN navigator beside lib-bpmn-engine (make peer). A module of its
// own, under testdata, so that lib-bpmn-engine never enters sextant's
// module graph; it measures this checkout's navigator and sdk.
module github.com/sextant-dev/sextant/navigators/bpmn/testdata/peer

go 1.26.0

require (
	github.com/nitram509/lib-bpmn-engine v0.2.4
	github.com/sextant-dev/sextant v0.0.0
	github.com/sextant-dev/sextant/sdk v0.1.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/antonmedv/expr v1.9.0 // indirect
	github.com/bwmarrin/snowflake v0.3.0 // indirect
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/hashicorp/go-hclog v1.6.3 // indirect
	github.com/hashicorp/go-plugin v1.8.0 // indirect
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.17 // indirect
	github.com/oklog/run v1.1.0 // indirect
	github.com/senseyeio/duration v0.0.0-20180430131211-7c2a214ada46 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/sextant-dev/sextant => ../../../..
	github.com/sextant-dev/sextant/sdk => ../../../../sdk
)
