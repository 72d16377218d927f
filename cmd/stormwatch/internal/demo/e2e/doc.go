// Package e2e holds the end-to-end and wall-clock tests of `stormwatch demo`, behind the e2e
// build tag (`make e2e`; they need bin/prometheus from scripts/install-tools.sh prometheus):
//
//   - every scenario run in real time (sped up) with its signature in the exported metrics, and
//     the retry-storm's amplification, naive against stormwatch;
//   - the binary: exit 0 on SIGINT, SIGTERM and at the end of --duration for every scenario,
//     retry-storm included, and no gave_up records for the calls a clean stop cuts off;
//   - the demo in a real Prometheus 3.16 (a fleet of demos, one job each, see
//     internal/e2eprom.StartFleet): the outage fires CircuitBreakerStuckOpen, RetryRateHigh and
//     FallbackSustained and resolves them, steady fires nothing, every dashboard query returns
//     data;
//   - the scenario matrix: every scenario at once, each its own demo and job, in one Prometheus
//     evaluating the demo profile's rules; per scenario exactly the expected alerts fire (and
//     resolve), for the expected dependencies and trip causes; every dashboard query returns
//     data during the outage;
//   - real time scales: every scenario for 31 minutes at speed 1 (20-minute faults) on the demo's
//     fake clock, scraped every 15s of demo time, against the default rules in promtool's rule
//     engine: exactly the expected alerts, a critical page within 10 minutes for the outage
//     without fallback, none for steady, the contained outage and the retry storm
//     (TestRealTimeScales in the realtime package beside this one, about 3 minutes);
//   - `stormwatch demo --prometheus`: with the demo profile the outage fires the same three
//     alerts within 3 minutes of the start, and Ctrl-C stops everything with exit 0.
//
// The other end-to-end tests live under the repository's e2e/ (its package doc lists where each
// is and why); these stay here because they import this command's internal demo package.
package e2e
