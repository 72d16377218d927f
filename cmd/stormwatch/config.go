package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/catalog"
	"github.com/stormwatch-go/stormwatch/dashboards"
	"github.com/stormwatch-go/stormwatch/internal/genconfig"
	"github.com/stormwatch-go/stormwatch/rules"
)

// maxConfigSize caps the config file: a real one is a few hundred bytes, and the YAML parser's
// memory grows with its input.
const maxConfigSize = 1 << 20

// config is a loaded stormwatch.yaml: the generators' configurations plus where each field
// was written, so validation errors can point at file:line.
type config struct {
	file       string
	rules      rules.Config
	dashboards dashboards.Config
	lines      map[string]int // field path → line
}

// Every error of the config file is a *catalog.ConfigError: Primitive "config" for what the
// file's own decoding rejects (syntax, unknown keys, types), "rules" or "dashboards" for what
// the generators' validation rejects; Field is the key path (alerts.RetryRateHigh.threshold)
// and Name the position in the file, "stormwatch.yaml:12" (just the file name when no line
// applies).

// pos is the position of path (or of its nearest written parent) for ConfigError.Name.
func (c *config) pos(path string) string {
	for p := path; p != ""; {
		if l, ok := c.lines[p]; ok {
			return c.at(l)
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return c.file
}

// at is the position of a line, "file:line"; no file, no position.
func (c *config) at(line int) string {
	if c.file == "" {
		return ""
	}
	if line <= 0 {
		return c.file
	}
	return c.file + ":" + strconv.Itoa(line)
}

// locate points a generator's configuration error at the line of its field; other errors are
// returned as they are.
func (c *config) locate(err error) error {
	var ce *catalog.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	located := *ce
	if located.Name == "" {
		located.Name = c.pos(ce.Field)
	}
	return &located
}

// errAt is an error of the file's own decoding at node n.
func (c *config) errAt(n *yaml.Node, path string, value any, format string, args ...any) error {
	return &catalog.ConfigError{Primitive: primitiveConfig, Name: c.at(n.Line), Field: path, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// loadConfig reads and strictly decodes path; an empty path means all defaults.
func loadConfig(path string) (*config, error) {
	if path == "" {
		return parseConfig("", nil)
	}
	fail := func(format string, args ...any) error {
		return &catalog.ConfigError{Primitive: primitiveConfig, Name: path, Reason: fmt.Sprintf(format, args...)}
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fail("reading config: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fail("reading config: %v", err)
	}
	if len(data) > maxConfigSize {
		return nil, fail("larger than %d KiB, the limit of a config file", maxConfigSize>>10)
	}
	return parseConfig(path, data)
}

// parseConfig strictly decodes data, read from file (for messages; may be empty). No data
// means all defaults.
func parseConfig(file string, data []byte) (*config, error) {
	c := &config{file: file, lines: map[string]int{}}
	if len(data) > maxConfigSize {
		return nil, &catalog.ConfigError{Primitive: primitiveConfig, Name: file, Reason: fmt.Sprintf("larger than %d KiB, the limit of a config file", maxConfigSize>>10)}
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return nil, &catalog.ConfigError{Primitive: primitiveConfig, Name: c.at(1 + bytes.Count(data[:i], []byte("\n"))),
			Reason: fmt.Sprintf("invalid UTF-8 at byte offset %d (a config file is UTF-8 text)", i)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return c, c.validate() // empty file: defaults
	case err != nil:
		return nil, c.yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, c.yamlError(err)
	default:
		return nil, c.errAt(&next, "", nil, "a second YAML document: a config file holds one")
	}
	if len(doc.Content) > 0 {
		if err := c.decodeRoot(doc.Content[0]); err != nil {
			return nil, err
		}
	}
	return c, c.validate()
}

// yamlLine matches the position the YAML parser puts in its syntax errors.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns a YAML syntax error into a ConfigError at its line: "file:3: did not find
// expected key" rather than "file: yaml: line 3: …".
func (c *config) yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	name := c.file
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		if l, perr := strconv.Atoi(m[1]); perr == nil {
			name, msg = c.at(l), m[2]
		}
	}
	return &catalog.ConfigError{Primitive: primitiveConfig, Name: name, Reason: "YAML: " + msg}
}

// validate runs the generators' own validation and points their errors at lines.
func (c *config) validate() error {
	if err := c.rules.Validate(); err != nil {
		return c.locate(err)
	}
	if _, err := dashboards.Generate(c.dashboards); err != nil {
		return c.locate(err)
	}
	return nil
}

// decoder decodes the value node of a field; path is the field's path.
type decoder func(n *yaml.Node, path string) error

// fields of a mapping: key → decoder; the key "*" decodes every other key.
type fields map[string]decoder

func (c *config) mapping(n *yaml.Node, path string, fs fields) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return c.errAt(n, path, nodeValue(n), "want a mapping of keys to values, got %s", kindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return c.errAt(k, path, nil, "a key must be a plain name, got %s", kindName(k))
		}
		key := k.Value
		p := joinPath(path, genconfig.Key(key))
		if line, dup := seen[key]; dup {
			return c.errAt(k, p, nil, "duplicate key (first at line %d)", line)
		}
		seen[key] = k.Line
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
			return c.errAt(k, p, nil, "unknown key (known keys: %s)", strings.Join(known, ", "))
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

// kindName says what a node is, for "want X, got Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias (anchors and aliases are not supported)"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "nothing (null)"
		}
		return "a " + strings.TrimPrefix(n.Tag, "!!")
	}
	return "nothing"
}

// rawValue is a scalar as written (a number, a boolean): shown without quotes.
type rawValue string

func (v rawValue) String() string { return string(v) }

// nodeValue is the rejected value of a node for ConfigError.Value: the text of a string, the
// literal of another scalar, nil for a mapping, list or alias.
func nodeValue(n *yaml.Node) any {
	switch {
	case n.Kind != yaml.ScalarNode:
		return nil
	case n.Tag == "!!str":
		return n.Value
	}
	return rawValue(n.Value)
}

func (c *config) str(dst *string) decoder {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return c.errAt(n, path, nodeValue(n), "want a string, got %s", kindName(n))
		}
		*dst = n.Value
		return nil
	}
}

func (c *config) boolean(dst *bool) decoder {
	return func(n *yaml.Node, path string) error {
		var v bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
			return c.errAt(n, path, nodeValue(n), "want true or false, got %s", kindName(n))
		}
		*dst = v
		return nil
	}
}

// duration decodes a Prometheus duration (model.ParseDuration): 90s, 1m30s, 2h, 1d, 1w.
func (c *config) duration(dst **time.Duration) decoder {
	return func(n *yaml.Node, path string) error {
		const want = "want a duration such as 30s, 5m, 1h30m or 1d"
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && !(n.Tag == "!!int" && n.Value == "0")) {
			if n.Tag == "!!int" || n.Tag == "!!float" {
				return c.errAt(n, path, nodeValue(n), "%s: a number needs a unit (s, m, h, d)", want)
			}
			return c.errAt(n, path, nodeValue(n), "%s, got %s", want, kindName(n))
		}
		d, err := model.ParseDuration(n.Value)
		if err != nil {
			return c.errAt(n, path, n.Value, "not a Prometheus duration (%s; units ms, s, m, h, d, w, y, largest first, each once): %v", want, err)
		}
		td := time.Duration(d)
		*dst = &td
		return nil
	}
}

// windowDuration decodes a duration that must not be 0 (the key is left out for the default);
// its range is checked by the rules.
func (c *config) windowDuration(dst *time.Duration, lo, hi, def time.Duration) decoder {
	return func(n *yaml.Node, p string) error {
		var d *time.Duration
		if err := c.duration(&d)(n, p); err != nil {
			return err
		}
		if *d == 0 {
			return c.errAt(n, p, model.Duration(0), "out of range [%s, %s] (leave the key out for the default %s)",
				rules.FormatDuration(lo), rules.FormatDuration(hi), rules.FormatDuration(def))
		}
		*dst = *d
		return nil
	}
}

// decodeGroupBy decodes group_by: a list of at most rules.MaxGroupBy label names.
func (c *config) decodeGroupBy(n *yaml.Node, p string, dst *[]string) error {
	if n.Kind != yaml.SequenceNode {
		return c.errAt(n, p, nodeValue(n), "want a list of label names such as [job, name], got %s", kindName(n))
	}
	if len(n.Content) > rules.MaxGroupBy {
		return c.errAt(n, p, nil, "%d labels, at most %d allowed", len(n.Content), rules.MaxGroupBy)
	}
	*dst = []string{}
	for i, item := range n.Content {
		var s string
		if err := c.str(&s)(item, fmt.Sprintf("%s[%d]", p, i)); err != nil {
			return err
		}
		*dst = append(*dst, s)
	}
	return nil
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
		"grafana_base_url": c.str(&c.rules.GrafanaBaseURL),
		"rate_window":      c.windowDuration(&c.rules.RateWindow, rules.MinRateWindow, rules.MaxRateWindow, rules.DefaultRateWindow),
		"scrape_interval":  c.windowDuration(&c.rules.ScrapeInterval, rules.MinScrapeInterval, rules.MaxScrapeInterval, rules.DefaultScrapeInterval),
		"group_by": func(n *yaml.Node, p string) error {
			haveGroupBy = true
			return c.decodeGroupBy(n, p, &groupBy)
		},
		"alerts": func(n *yaml.Node, p string) error {
			return c.mapping(n, p, fields{"*": c.decodeAlert})
		},
		"dashboards": func(n *yaml.Node, p string) error {
			return c.mapping(n, p, fields{
				"title_prefix": c.str(&c.dashboards.TitlePrefix),
				"uid_prefix":   c.str(&c.dashboards.UIDPrefix),
				"provisioning": c.boolean(&c.dashboards.Provisioning),
				"histograms":   c.str((*string)(&c.dashboards.Histograms)),
			})
		},
		"slos": c.decodeSLOs,

		// the stacks the output goes to (stacks.go)
		"target":     c.str((*string)(&c.rules.Target)),
		"kubernetes": c.decodeKubernetes,
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
	c.dashboards.GroupBy = c.rules.GroupBy
	c.rules.DashboardTitlePrefix = c.dashboards.TitlePrefix
	c.rules.DashboardUIDPrefix = c.dashboards.UIDPrefix
	return nil
}

// alertInfo describes the default alert called name.
func alertInfo(name string) (rules.AlertInfo, bool) {
	for _, a := range rules.Alerts() {
		if a.Name == name {
			return a, true
		}
	}
	return rules.AlertInfo{}, false
}

func (c *config) decodeAlert(n *yaml.Node, path string) error {
	name := path[strings.LastIndexByte(path, '.')+1:]
	info, ok := alertInfo(name)
	if !ok {
		return &catalog.ConfigError{Primitive: primitiveConfig, Name: c.pos(path), Field: path,
			Reason: "unknown alert (known: " + strings.Join(rules.AlertNames(), ", ") + ")"}
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
			v, err := c.threshold(n, p, info)
			if err != nil {
				return err
			}
			ac.Threshold = &v
			return nil
		},
		"min_instances": func(n *yaml.Node, p string) error {
			var v int
			if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
				return c.errAt(n, p, nodeValue(n), "want a whole number of instances, got %s", kindName(n))
			}
			ac.MinInstances = &v
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

// threshold decodes an alert's threshold: a finite number whose unit the alert defines.
func (c *config) threshold(n *yaml.Node, path string, info rules.AlertInfo) (float64, error) {
	unit := ""
	if info.ThresholdUnit != "" {
		unit = " of " + info.ThresholdUnit
	}
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
		hint := ""
		if d, err := model.ParseDuration(n.Value); err == nil && n.Kind == yaml.ScalarNode && info.ThresholdUnit == "seconds" {
			hint = fmt.Sprintf("; write %s for %s", strconv.FormatFloat(time.Duration(d).Seconds(), 'f', -1, 64), n.Value)
		}
		return 0, c.errAt(n, path, nodeValue(n), "want a number%s, got %s: %s, %s%s",
			unit, kindName(n), info.ThresholdDoc, info.ThresholdRange, hint)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, c.errAt(n, path, nodeValue(n), "want a finite number%s: %s, %s", unit, info.ThresholdDoc, info.ThresholdRange)
	}
	return v, nil
}
