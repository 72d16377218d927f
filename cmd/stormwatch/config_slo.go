package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/stormwatch-go/stormwatch/rules"
)

// decodeSLOs decodes the slos list: one mapping per dependency SLO. The rules validate the
// values; this checks the shape and the types.
func (c *config) decodeSLOs(n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return c.errAt(n, path, nodeValue(n), "want a list of SLOs (- name: payments, objective: 0.999), got %s", kindName(n))
	}
	if len(n.Content) > rules.MaxSLOs {
		return c.errAt(n, path, nil, "%d SLOs, at most %d allowed", len(n.Content), rules.MaxSLOs)
	}
	slos := make([]rules.SLO, 0, len(n.Content))
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		c.lines[p] = item.Line
		if item.Kind != yaml.MappingNode {
			return c.errAt(item, p, nodeValue(item), "want a mapping such as {name: payments, objective: 0.999}, got %s", kindName(item))
		}
		var s rules.SLO
		var source string
		err := c.mapping(item, p, fields{
			"id":         c.str(&s.ID),
			"name":       c.str(&s.Name),
			"name_regex": c.str(&s.NameRegex),
			"objective": func(n *yaml.Node, p string) error {
				return c.objective(n, p, &s.Objective)
			},
			"period": func(n *yaml.Node, p string) error {
				var d *time.Duration
				if err := c.duration(&d)(n, p); err != nil {
					return err
				}
				if *d == 0 {
					return c.errAt(n, p, model.Duration(0), "out of range [%s, %s] (leave the key out for the default %s)",
						rules.FormatDuration(rules.MinSLOPeriod), rules.FormatDuration(rules.MaxSLOPeriod), rules.FormatDuration(rules.DefaultSLOPeriod))
				}
				s.Period = *d
				return nil
			},
			"source":         c.str(&source),
			"fallbacks_good": c.boolean(&s.FallbacksGood),
			"min_calls": func(n *yaml.Node, p string) error {
				return c.minCalls(n, p, &s.MinCalls)
			},
			"page_severity":   c.str(&s.PageSeverity),
			"ticket_severity": c.str(&s.TicketSeverity),
			"labels": func(n *yaml.Node, p string) error {
				labels := map[string]string{}
				err := c.mapping(n, p, fields{"*": func(n *yaml.Node, lp string) error {
					var v string
					if err := c.str(&v)(n, lp); err != nil {
						return err
					}
					labels[strings.TrimPrefix(lp, p+".")] = v
					return nil
				}})
				s.Labels = labels
				return err
			},
		})
		if err != nil {
			return err
		}
		s.Source = rules.SLOSource(source)
		slos = append(slos, s)
	}
	c.rules.SLOs = slos
	return nil
}

// objective decodes an SLO objective: a number in (0, 1). A percentage is refused with a hint.
func (c *config) objective(n *yaml.Node, path string, dst *float64) error {
	const want = "want the share of good calls as a number in (0, 1), such as 0.999 for 99.9%"
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
		hint := ""
		if t := strings.TrimSpace(n.Value); n.Kind == yaml.ScalarNode && strings.HasSuffix(t, "%") {
			if f, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64); err == nil {
				hint = "; write " + strconv.FormatFloat(f/100, 'g', 12, 64) + " for " + t
			}
		}
		return c.errAt(n, path, nodeValue(n), "%s, got %s%s", want, kindName(n), hint)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return c.errAt(n, path, nodeValue(n), "%s", want)
	}
	*dst = v
	return nil
}

// minCalls decodes the minimum-traffic guard: a whole number of calls.
func (c *config) minCalls(n *yaml.Node, path string, dst *int) error {
	var v int64
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		return c.errAt(n, path, nodeValue(n), "want a whole number of calls in the alert's long window (0: the default, 1: no guard), got %s", kindName(n))
	}
	if v < 0 || v > rules.MaxSLOMinCalls {
		return c.errAt(n, path, rawValue(n.Value), "out of range [0, %d] (0: the default of each alert, 1: no guard)", rules.MaxSLOMinCalls)
	}
	*dst = int(v)
	return nil
}
