// Package conformance holds tests that check stormwatch's generated artefacts against the real
// Prometheus code: every generated PromQL expression parses with the PromQL parser of
// Prometheus 3.16 (github.com/prometheus/prometheus v0.316.0) and references only metrics and
// labels of the catalog.
//
// It is a separate module so that the library's go.mod never depends on Prometheus itself;
// run it with `cd conformance && go test ./...` (part of `make test`).
package conformance
