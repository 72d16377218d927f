// Package victoriametrics holds the end-to-end test of the generated rules on VictoriaMetrics
// single-node and vmalert, behind the e2e build tag (`make e2e-victoriametrics`, part of
// `make e2e`): it needs bin/victoria-metrics and bin/vmalert (scripts/install-tools.sh
// victoriametrics).
package victoriametrics
