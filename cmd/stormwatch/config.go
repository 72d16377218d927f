package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/collector/catalog"
	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/rules"
)

// config is a loaded stormwatch.yaml: the generators' configurations plus where each field
// was written, so validation errors can point at file:line.
type config struct {
	file       string
	rules      rules.Config
	dashboards dashboards.Config
	lines      map[string]int // field path → line
}

// configError is a usage error in the config file; it exits 2.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// errorf returns a configError at the line of path (or of its nearest written parent).
func (c *config) errorf(path, format string, args ...any) error {
	return &configError{msg: c.pos(path) + path + ": " + fmt.Sprintf(format, args...)}
}

func (c *config) pos(path string) string {
	if c.file == "" {
		return ""
	}
	for p := path; p != ""; {
		if l, ok := c.lines[p]; ok {
			return fmt.Sprintf("%s:%d: ", c.file, l)
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return c.file + ": "
}

// loadConfig reads and strictly decodes path; an empty path means all defaults.
func loadConfig(path string) (*config, error) {
	c := &config{file: path, lines: map[string]int{}}
	if path == "" {
		return c, c.validate()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &configError{msg: fmt.Sprintf("reading config: %v", err)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &configError{msg: fmt.Sprintf("%s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if len(doc.Content) == 0 {
		return c, c.validate() // empty file: defaults
	}
	if err := c.decodeRoot(doc.Content[0]); err != nil {
		return nil, err
	}
	return c, c.validate()
}

// validate runs the generators' own validation and maps their errors to lines.
func (c *config) validate() error {
	if err := c.rules.Validate(); err != nil {
		var ce *catalog.ConfigError
		if errors.As(err, &ce) {
			return c.errorf(ce.Field, "%s", ce.Reason)
		}
		var fe *rules.FieldError
		if errors.As(err, &fe) {
			return c.errorf(fe.Field, "%s", fe.Reason)
		}
		return &configError{msg: err.Error()}
	}
	if _, err := dashboards.Generate(c.dashboards); err != nil {
		msg := err.Error()
		for prefix, field := range map[string]string{
			"dashboards: TitlePrefix": "dashboards.title_prefix",
			"dashboards: UIDPrefix":   "dashboards.uid_prefix",
			"dashboards: Namespace":   "namespace",
			"dashboards: Selector":    "selector",
		} {
			if strings.HasPrefix(msg, prefix) {
				return c.errorf(field, "%s", strings.TrimPrefix(msg, "dashboards: "))
			}
		}
		return &configError{msg: c.pos("dashboards") + msg}
	}
	return nil
}

// fields of a mapping: key → decoder. The decoder gets the value node and the field path.
type fields map[string]func(n *yaml.Node, path string) error

func (c *config) mapping(n *yaml.Node, path string, fs fields) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return c.errAt(n, path, "want a mapping, got %s", kindName(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		p := joinPath(path, key)
		if seen[key] {
			return c.errAt(k, p, "duplicate key")
		}
		seen[key] = true
		c.lines[p] = k.Line
		dec, ok := fs[key]
		if !ok {
			dec, ok = fs["*"]
		}
		if !ok {
			known := make([]string, 0, len(fs))
			for name := range fs {
				known = append(known, name)
			}
			slices.Sort(known)
			return c.errAt(k, p, "unknown key %q (known keys: %s)", key, strings.Join(known, ", "))
		}
		if err := dec(v, p); err != nil {
			return err
		}
	}
	return nil
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func (c *config) errAt(n *yaml.Node, path, format string, args ...any) error {
	loc := ""
	if c.file != "" {
		loc = fmt.Sprintf("%s:%d: ", c.file, n.Line)
	}
	return &configError{msg: loc + path + ": " + fmt.Sprintf(format, args...)}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return strings.TrimPrefix(n.Tag, "!!") + " " + strconv.Quote(n.Value)
	}
	return "nothing"
}

func (c *config) str(dst *string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return c.errAt(n, path, "want a string, got %s", kindName(n))
		}
		*dst = n.Value
		return nil
	}
}

func (c *config) boolean(dst *bool) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return c.errAt(n, path, "want true or false, got %s", kindName(n))
		}
		v, err := strconv.ParseBool(n.Value)
		if err != nil {
			var b bool
			if yerr := n.Decode(&b); yerr != nil {
				return c.errAt(n, path, "want true or false, got %q", n.Value)
			}
			v = b
		}
		*dst = v
		return nil
	}
}

func (c *config) decodeRoot(n *yaml.Node) error {
	var groupBy []string
	var haveGroupBy bool
	var ns string
	var haveNS bool
	err := c.mapping(n, "", fields{
		"namespace": func(n *yaml.Node, p string) error {
			haveNS = true
			return c.str(&ns)(n, p)
		},
		"selector":         c.str(&c.rules.Selector),
		"runbook_base_url": c.str(&c.rules.RunbookBaseURL),
		"rate_window": func(n *yaml.Node, p string) error {
			var d *time.Duration
			if err := c.duration(&d)(n, p); err != nil {
				return err
			}
			if *d == 0 {
				return c.errAt(n, p, "0s: out of range [%s, %s] (leave the key out for the default %s)",
					rules.FormatDuration(rules.MinRateWindow), rules.FormatDuration(rules.MaxRateWindow), rules.FormatDuration(rules.DefaultRateWindow))
			}
			c.rules.RateWindow = *d
			return nil
		},
		"group_by": func(n *yaml.Node, p string) error {
			haveGroupBy = true
			if n.Kind != yaml.SequenceNode {
				return c.errAt(n, p, "want a list of label names, got %s", kindName(n))
			}
			groupBy = []string{}
			for i, item := range n.Content {
				var s string
				if err := c.str(&s)(item, fmt.Sprintf("%s[%d]", p, i)); err != nil {
					return err
				}
				groupBy = append(groupBy, s)
			}
			return nil
		},
		"alerts": func(n *yaml.Node, p string) error {
			return c.mapping(n, p, fields{"*": c.decodeAlert})
		},
		"dashboards": func(n *yaml.Node, p string) error {
			return c.mapping(n, p, fields{
				"title_prefix": c.str(&c.dashboards.TitlePrefix),
				"uid_prefix":   c.str(&c.dashboards.UIDPrefix),
				"provisioning": c.boolean(&c.dashboards.Provisioning),
			})
		},
	})
	if err != nil {
		return err
	}
	if haveNS {
		if ns == "" {
			ns = rules.NoNamespace // written as "": no prefix
		}
		c.rules.Namespace = ns
	}
	if haveGroupBy {
		c.rules.GroupBy = groupBy
	}
	c.dashboards.Namespace = c.rules.Namespace
	c.dashboards.Selector = c.rules.Selector
	c.rules.DashboardTitlePrefix = c.dashboards.TitlePrefix
	return nil
}

func (c *config) decodeAlert(n *yaml.Node, path string) error {
	name := path[strings.LastIndexByte(path, '.')+1:]
	if !slices.Contains(rules.AlertNames(), name) {
		return c.errorf(path, "unknown alert %q (known: %s)", name, strings.Join(rules.AlertNames(), ", "))
	}
	var ac rules.AlertConfig
	err := c.mapping(n, path, fields{
		"enabled": func(n *yaml.Node, p string) error {
			var b bool
			if err := c.boolean(&b)(n, p); err != nil {
				return err
			}
			ac.Enabled = &b
			return nil
		},
		"threshold": func(n *yaml.Node, p string) error {
			if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
				return c.errAt(n, p, "want a number, got %s", kindName(n))
			}
			v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return c.errAt(n, p, "want a finite number, got %q", n.Value)
			}
			ac.Threshold = &v
			return nil
		},
		"for":             c.duration(&ac.For),
		"keep_firing_for": c.duration(&ac.KeepFiringFor),
		"severity":        c.str(&ac.Severity),
	})
	if err != nil {
		return err
	}
	if c.rules.Alerts == nil {
		c.rules.Alerts = map[string]rules.AlertConfig{}
	}
	c.rules.Alerts[name] = ac
	return nil
}

func (c *config) duration(dst **time.Duration) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && !(n.Tag == "!!int" && n.Value == "0")) {
			return c.errAt(n, path, "want a duration such as 30s, 5m or 1h, got %s", kindName(n))
		}
		d, err := rules.ParseDuration(n.Value)
		if err != nil {
			return c.errAt(n, path, "%v", err)
		}
		*dst = &d
		return nil
	}
}
