module github.com/stormwatch-go/stormwatch/instrument/grpcx

go 1.25.0

require (
	github.com/stormwatch-go/stormwatch v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260706201446-f0a921348800 // indirect
)

// Development: the main module from this repository. A release pins a tagged version of it.
replace github.com/stormwatch-go/stormwatch => ../..
