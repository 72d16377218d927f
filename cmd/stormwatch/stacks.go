package main

import (
	"flag"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

// manifestsDir holds, with --format operator, the Kubernetes manifests and nothing else, so
// that `kubectl apply -f <out>/manifests` (recursive or not) applies them as they are.
const manifestsDir = "manifests"

// mixinFile is the jsonnet monitoring mixin, relative to -o.
const mixinFile = rules.MixinFile

// genMixin renders the jsonnet mixin of the rules and dashboards.
func genMixin(c *config) ([]outFile, error) {
	files, err := dashboardFiles(c)
	if err != nil {
		return nil, err
	}
	var ds []rules.MixinDashboard
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".json") {
			ds = append(ds, rules.MixinDashboard{Name: f.Path, JSON: f.Data})
		}
	}
	b, err := rules.GenerateMixin(c.rules, ds)
	if err != nil {
		return nil, err
	}
	return []outFile{{mixinFile, b}}, nil
}

// stackFlags are generate's flags for the stacks the output goes to; set ones override the
// config file.
type stackFlags struct {
	target, name, namespace string
	labels                  labelFlag
	dashboardLabel          string
}

func (sf *stackFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.target, "target", "", "rule engine: prometheus (default), mimir, thanos or victoriametrics (overrides the config's target)")
	fs.StringVar(&sf.name, "manifest-name", "", "metadata.name of the PrometheusRule (--format operator); default derived from the selector's job (overrides kubernetes.name)")
	fs.StringVar(&sf.namespace, "manifest-namespace", "", "metadata.namespace of every manifest (overrides kubernetes.namespace)")
	fs.Var(&sf.labels, "manifest-label", "key=value label of every manifest, repeatable, e.g. release=kube-prometheus-stack (added to kubernetes.labels)")
	fs.StringVar(&sf.dashboardLabel, "dashboard-label", "", "key=value label of the dashboards' ConfigMaps for Grafana's sidecar (default grafana_dashboard=1)")
}

// apply puts the set flags into c.
func (sf *stackFlags) apply(c *config) error {
	if sf.target != "" {
		c.rules.Target = rules.Target(sf.target)
	}
	k := &c.rules.Kubernetes
	if sf.name != "" {
		k.Name = sf.name
	}
	if sf.namespace != "" {
		k.Namespace = sf.namespace
	}
	for _, kv := range sf.labels {
		if k.Labels == nil {
			k.Labels = map[string]string{}
		}
		k.Labels[kv[0]] = kv[1]
	}
	if sf.dashboardLabel != "" {
		key, value, ok := strings.Cut(sf.dashboardLabel, "=")
		if !ok {
			return usageErr("--dashboard-label", sf.dashboardLabel, "want key=value, e.g. grafana_dashboard=1")
		}
		k.DashboardLabel, k.DashboardLabelValue = key, value
	}
	return c.locate(c.rules.Validate())
}

// labelFlag collects repeated key=value flags.
type labelFlag [][2]string

func (l *labelFlag) String() string { return "" }

func (l *labelFlag) Set(s string) error {
	key, value, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	*l = append(*l, [2]string{key, value})
	return nil
}

// plainRules reports whether the rules target writes rulesFile as a plain Prometheus rule
// file that the promtool tests can load.
func plainRules(c *config) bool {
	return c.rules.Format != rules.FormatOperator && engine(c) == rules.TargetPrometheus
}

func engine(c *config) rules.Target {
	if c.rules.Target == "" {
		return rules.TargetPrometheus
	}
	return c.rules.Target
}

// ruleFileNames are the rules target's file names: plain, in manifests/ with --format
// operator, or named after the engine (stormwatch-rules.mimir.yaml) for another target.
func ruleFileNames(c *config) (main, slo string) {
	switch {
	case c.rules.Format == rules.FormatOperator:
		return manifestsDir + "/" + manifestFile, manifestsDir + "/" + sloManifestFile
	case engine(c) != rules.TargetPrometheus:
		t := "." + string(engine(c))
		return strings.TrimSuffix(rulesFile, ".yaml") + t + ".yaml", strings.TrimSuffix(sloRulesFile, ".yaml") + t + ".yaml"
	}
	return rulesFile, sloRulesFile
}

// dashboardConfigMaps wraps the dashboards in ConfigMaps under manifests/ (--format operator).
func dashboardConfigMaps(c *config, files []outFile) ([]outFile, error) {
	meta, err := rules.KubernetesMeta(c.rules)
	if err != nil {
		return nil, err
	}
	dfs := make([]dashboards.File, len(files))
	for i, f := range files {
		dfs[i] = dashboards.File(f)
	}
	cms, err := dashboards.ConfigMaps(dfs, dashboards.ConfigMapOptions{
		Name: meta.Name, Namespace: meta.Namespace, Labels: meta.Labels,
		SidecarLabel: meta.DashboardLabel, SidecarValue: meta.DashboardLabelValue,
	})
	if err != nil {
		return nil, err
	}
	out := make([]outFile, len(cms))
	for i, f := range cms {
		out[i] = outFile{manifestsDir + "/" + f.Path, f.Data}
	}
	return out, nil
}

// decodeKubernetes decodes the config file's kubernetes mapping.
func (c *config) decodeKubernetes(n *yaml.Node, path string) error {
	k := &c.rules.Kubernetes
	return c.mapping(n, path, fields{
		"name":                  c.str(&k.Name),
		"namespace":             c.str(&k.Namespace),
		"dashboard_label":       c.str(&k.DashboardLabel),
		"dashboard_label_value": c.str(&k.DashboardLabelValue),
		"labels": func(n *yaml.Node, p string) error {
			return c.mapping(n, p, fields{"*": func(v *yaml.Node, lp string) error {
				var s string
				if err := c.str(&s)(v, lp); err != nil {
					return err
				}
				if k.Labels == nil {
					k.Labels = map[string]string{}
				}
				k.Labels[lp[len(p)+1:]] = s
				return nil
			}})
		},
	})
}
