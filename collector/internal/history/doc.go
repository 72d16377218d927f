// Package history holds the scripted registries that the collector's tests and the
// OpenTelemetry bridge's tests (collector/otelx, a module of its own) share, so that both
// exporters are checked against the same calls:
//
//   - [New] and [History.EveryPath]: one dependency behind a full pipeline (retry, breaker,
//     bulkhead, timeout, fallback) on a fake clock, driven through every path that records a
//     series — and, with [WithMoreNames], a second dependency and names the registry's
//     cardinality guard refuses;
//   - [ManyNames]: a registry of 1,000 named breakers with one call each, for the scrape
//     benchmarks.
//
// Everything here fails the test through testing.TB (require) rather than returning errors and
// bounds every wait. The package has no package-level state that a test can change.
package history
