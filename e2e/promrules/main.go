// Command promrules loads the alerting rules and the Grafana dashboard the Helm
// chart ships, with Prometheus' own parsers, and fails on any error: what
// `promtool check rules` does for the rules, and the same PromQL parser for
// every query of the dashboard's panels.
//
// Usage:
//
//	helm template … --set prometheusRule.enabled=true --set grafanaDashboard.enabled=true \
//	  | promrules [-metrics SCRAPE] [- | FILE...]
//
// Input: YAML documents (a `helm template` rendering). Every PrometheusRule's
// spec.groups is parsed and validated by model/rulefmt (rule names, `for`,
// labels, annotation templates, and each expr by promql/parser); every
// ConfigMap labelled grafana_dashboard: "1" holds dashboards (*.json in its
// data) whose panels' targets' `expr` are parsed by promql/parser.
//
// -metrics FILE: a scrape of the operator's /metrics (text format): every
// metric name a rule or a panel selects must be one the operator exports (a
// `# TYPE` line, with _sum/_count (summary) and _bucket (histogram) too).
//
// It fails (exit 1) on any error, and when the input holds no rule or no
// dashboard query, so that a chart rendering without them cannot pass.
// Stdout: one summary line.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

type doc struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec yaml.Node         `yaml:"spec"`
	Data map[string]string `yaml:"data"`
}

// panel is what a Grafana panel holds that matters here: its queries, and nested panels (rows).
type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type dashboard struct {
	Title  string  `json:"title"`
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type checker struct {
	parser  parser.Parser
	errs    []string
	groups  int
	rules   int
	queries int
	// every metric name selected, and where
	used map[string][]string
}

func (c *checker) fail(format string, a ...any) { c.errs = append(c.errs, fmt.Sprintf(format, a...)) }

func main() {
	metrics := flag.String("metrics", "", "a scrape of the operator's /metrics: every selected metric name must be there")
	flag.Parse()
	c := &checker{parser: parser.NewParser(parser.Options{}), used: map[string][]string{}}
	files := flag.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, f := range files {
		var in []byte
		var err error
		if f == "-" {
			in, err = io.ReadAll(os.Stdin)
		} else {
			in, err = os.ReadFile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "promrules:", err)
			os.Exit(1)
		}
		c.documents(f, in)
	}
	if c.rules == 0 {
		c.fail("no alerting or recording rule found (is prometheusRule.enabled set?)")
	}
	if c.queries == 0 {
		c.fail("no dashboard panel query found (is grafanaDashboard.enabled set?)")
	}
	names := 0
	if *metrics != "" {
		names = c.exported(*metrics)
	}
	if len(c.errs) > 0 {
		for _, e := range c.errs {
			fmt.Fprintln(os.Stderr, "promrules:", e)
		}
		os.Exit(1)
	}
	fmt.Printf("promrules: %d groups, %d rules, %d panel queries parsed; %d metric names", c.groups, c.rules, c.queries, len(c.used))
	if *metrics != "" {
		fmt.Printf(", each among the %d the operator exports", names)
	}
	fmt.Println()
}

func (c *checker) documents(file string, in []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(in))
	for {
		var d doc
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			c.fail("%s: reading YAML: %v", file, err)
			return
		}
		switch {
		case d.Kind == "PrometheusRule":
			c.ruleGroups(fmt.Sprintf("%s: PrometheusRule %s", file, d.Metadata.Name), d.Spec)
		case d.Kind == "ConfigMap" && d.Metadata.Labels["grafana_dashboard"] == "1":
			keys := make([]string, 0, len(d.Data))
			for k := range d.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				c.dashboard(fmt.Sprintf("%s: ConfigMap %s, %s", file, d.Metadata.Name, k), d.Data[k])
			}
		}
	}
}

// ruleGroups: spec (groups: …) as a rule file, parsed and validated as Prometheus loads one.
func (c *checker) ruleGroups(where string, spec yaml.Node) {
	text, err := yaml.Marshal(&spec)
	if err != nil {
		c.fail("%s: %v", where, err)
		return
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	groups, errs := rulefmt.Parse(text, false, model.UTF8Validation, c.parser, logger)
	for _, e := range errs {
		c.fail("%s: %v", where, e)
	}
	if groups == nil {
		return
	}
	for _, g := range groups.Groups {
		c.groups++
		for _, r := range g.Rules {
			c.rules++
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			c.expr(fmt.Sprintf("%s, group %s, rule %s", where, g.Name, name), r.Expr)
			if r.Alert != "" && (r.Annotations["summary"] == "" || r.Annotations["description"] == "") {
				c.fail("%s, group %s, alert %s: needs a summary and a description annotation", where, g.Name, name)
			}
			if r.Alert != "" && r.Labels["severity"] == "" {
				c.fail("%s, group %s, alert %s: needs a severity label", where, g.Name, name)
			}
		}
	}
}

func (c *checker) dashboard(where, text string) {
	var d dashboard
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		c.fail("%s: not a dashboard: %v", where, err)
		return
	}
	if d.Title == "" || d.UID == "" {
		c.fail("%s: a dashboard needs a title and a uid", where)
	}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				c.queries++
				c.expr(fmt.Sprintf("%s, panel %q, query %s", where, p.Title, t.RefID), grafanaVariables(t.Expr))
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
}

// grafanaVariables replaces the variables Grafana fills in before a query reaches
// Prometheus ($__rate_interval, $__range, …; ${job}) with what PromQL parses.
func grafanaVariables(expr string) string {
	r := strings.NewReplacer(
		"$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
		"${__rate_interval}", "5m", "${__interval}", "1m", "${__range}", "1h",
	)
	return r.Replace(expr)
}

// expr parses one query and records the metric names it selects.
func (c *checker) expr(where, text string) {
	if strings.TrimSpace(text) == "" {
		c.fail("%s: empty expression", where)
		return
	}
	e, err := c.parser.ParseExpr(text)
	if err != nil {
		c.fail("%s: %v", where, err)
		return
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			if name == "" {
				for _, m := range vs.LabelMatchers {
					if m.Name == model.MetricNameLabel {
						name = m.Value
					}
				}
			}
			if name == "" {
				c.fail("%s: a selector without a metric name: %s", where, vs.String())
			} else {
				c.used[name] = append(c.used[name], where)
			}
		}
		return nil
	})
}

// exported checks every selected name against the scrape; returns how many names it exports.
func (c *checker) exported(file string) int {
	f, err := os.Open(file)
	if err != nil {
		c.fail("%v", err)
		return 0
	}
	defer f.Close()
	have := map[string]bool{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 4 && fields[0] == "#" && fields[1] == "TYPE" {
			name := fields[2]
			have[name] = true
			switch fields[3] {
			case "summary":
				have[name+"_sum"], have[name+"_count"] = true, true
			case "histogram":
				have[name+"_sum"], have[name+"_count"], have[name+"_bucket"] = true, true, true
			}
		}
	}
	if err := s.Err(); err != nil {
		c.fail("%s: %v", file, err)
	}
	if len(have) == 0 {
		c.fail("%s: no `# TYPE` line: not a scrape of /metrics", file)
	}
	used := make([]string, 0, len(c.used))
	for n := range c.used {
		used = append(used, n)
	}
	sort.Strings(used)
	for _, n := range used {
		if !have[n] {
			c.fail("metric %s is not exported by the operator; used by %s", n, strings.Join(c.used[n], "; "))
		}
	}
	return len(have)
}
